package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// NodeToStatus records why each node was rejected. Nodes not recorded
// share one status (Absent): after a PreFilter rejection that is the
// PreFilter's status, so no map of every node is built.
type NodeToStatus struct {
	statuses map[string]*Status
	absent   *Status
}

// NewNodeToStatus returns an empty record whose unrecorded nodes have
// status absent.
func NewNodeToStatus(absent *Status) *NodeToStatus {
	return &NodeToStatus{statuses: map[string]*Status{}, absent: absent}
}

// Set records node's status.
func (m *NodeToStatus) Set(node string, s *Status) { m.statuses[node] = s }

// Get returns node's status.
func (m *NodeToStatus) Get(node string) *Status {
	if s, ok := m.statuses[node]; ok {
		return s
	}
	return m.absent
}

// Len is the number of nodes recorded one by one.
func (m *NodeToStatus) Len() int { return len(m.statuses) }

// Absent is the status of nodes not recorded.
func (m *NodeToStatus) Absent() *Status { return m.absent }

// SetAbsent sets the status of nodes not recorded.
func (m *NodeToStatus) SetAbsent(s *Status) { m.absent = s }

// ForEach calls fn for each recorded node.
func (m *NodeToStatus) ForEach(fn func(node string, s *Status)) {
	for n, s := range m.statuses {
		fn(n, s)
	}
}

// NodesWithCode returns the nodes of all whose status has code.
func (m *NodeToStatus) NodesWithCode(all []*NodeInfo, code Code) []*NodeInfo {
	var out []*NodeInfo
	for _, ni := range all {
		if m.Get(ni.Name()).Code() == code {
			out = append(out, ni)
		}
	}
	return out
}

// Diagnosis is what a failed cycle learned.
type Diagnosis struct {
	NodeToStatus *NodeToStatus
	// UnschedulablePlugins are the plugins that rejected the pod; the
	// queue moves it back only on events they care about.
	UnschedulablePlugins sets.Set[string]
	// PreFilterMsg is set when a PreFilter rejected the pod outright.
	PreFilterMsg string
	// PostFilterMsg is what preemption said.
	PostFilterMsg string
}

// FitError is returned when no node can take the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error reads as Kubernetes' FailedScheduling message, so that users and
// tools that parse it see the same text:
//
//	0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.
//
// Each reason is counted over the nodes that gave it; "count reason"
// strings are sorted as strings, as Kubernetes does.
func (f *FitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		// A PreFilter rejection gave every node the same status; listing
		// them would repeat the reason once per node.
		fmt.Fprintf(&b, " %s.", f.Diagnosis.PreFilterMsg)
	} else if m := f.Diagnosis.NodeToStatus; m != nil {
		counts := map[string]int{}
		m.ForEach(func(_ string, s *Status) {
			for _, r := range s.Reasons() {
				counts[r]++
			}
		})
		if rest := f.NumAllNodes - m.Len(); rest > 0 {
			for _, r := range m.Absent().Reasons() {
				counts[r] += rest
			}
		}
		if len(counts) > 0 {
			parts := make([]string, 0, len(counts))
			for r, n := range counts {
				parts = append(parts, fmt.Sprintf("%d %s", n, r))
			}
			sort.Strings(parts)
			fmt.Fprintf(&b, " %s.", strings.Join(parts, ", "))
		}
	}
	if f.Diagnosis.PostFilterMsg != "" {
		fmt.Fprintf(&b, " %s", f.Diagnosis.PostFilterMsg)
	}
	return b.String()
}
