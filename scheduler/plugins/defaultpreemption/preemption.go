// Package defaultpreemption makes room for a pod that fits nowhere by
// evicting lower-priority pods from one node. Of the nodes where
// evicting some of them would let the pod fit, it picks the one whose
// victims matter least: lowest highest priority, then lowest priority
// sum, then fewest victims, then most recently started. On that node it
// evicts the minimal set: it removes every lower-priority pod, then puts
// back as many as still let the pod fit, most important first.
//
// The victims are deleted gracefully and the pod is nominated to the
// node (status.nominatedNodeName); while they terminate, lower-priority
// pods cannot take the room, and the pod does not preempt again.
package defaultpreemption

import (
	"context"
	"math/rand/v2"
	"sync"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

// Messages, in Kubernetes' wording.
const (
	msgPolicyNever       = "not eligible due to preemptionPolicy=Never."
	msgTerminatingOnNode = "not eligible due to a terminating pod on the nominated node."
	msgNotHelpful        = "Preemption is not helpful for scheduling"
	msgNoVictims         = "No preemption victims found for incoming pod"
)

// Candidate search bounds, as Kubernetes' defaults: at least 10% of the
// nodes or 100 nodes, whichever is more.
const (
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

// DefaultPreemption is the plugin.
type DefaultPreemption struct {
	h framework.Handle
}

var _ framework.PostFilterPlugin = (*DefaultPreemption)(nil)

// New is the plugin's factory.
func New(h framework.Handle) (framework.Plugin, error) { return &DefaultPreemption{h: h}, nil }

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return names.DefaultPreemption }

// EventsToRegister implements framework.EnqueueExtensions: preemption
// rejects no pod itself.
func (*DefaultPreemption) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{}
}

// candidate is a node and the pods to evict from it.
type candidate struct {
	node    string
	victims []*framework.PodInfo
}

// PostFilter implements framework.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, statuses *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	if ok, msg := pl.eligible(pod, statuses); !ok {
		return nil, framework.NewStatus(framework.Unschedulable, "preemption: "+msg)
	}
	all := pl.h.SnapshotSharedLister().List()
	potential := statuses.NodesWithCode(all, framework.Unschedulable)
	candidates, nodeStatuses := pl.findCandidates(ctx, state, pod, potential, len(all))
	if len(candidates) == 0 {
		fe := &framework.FitError{Pod: pod.Pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{NodeToStatus: nodeStatuses}}
		// An empty nomination clears a stale one.
		return &framework.PostFilterResult{}, framework.NewStatus(framework.Unschedulable, "preemption: "+fe.Error())
	}
	best := pickOne(candidates)
	if err := pl.prepare(ctx, best, pod); err != nil {
		return nil, framework.AsStatus(err)
	}
	return &framework.PostFilterResult{NominatedNodeName: best.node}, nil
}

// eligible refuses pods that may not preempt, and pods whose earlier
// preemption is still in progress on their nominated node.
func (pl *DefaultPreemption) eligible(pod *framework.PodInfo, statuses *framework.NodeToStatus) (bool, string) {
	p := pod.Pod
	if p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, msgPolicyNever
	}
	nn := p.Status.NominatedNodeName
	if nn == "" || statuses.Get(nn).Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni := pl.h.SnapshotSharedLister().Get(nn); ni != nil {
		for _, q := range ni.Pods {
			if q.Priority < pod.Priority && q.Pod.DeletionTimestamp != nil {
				return false, msgTerminatingOnNode
			}
		}
	}
	return true, ""
}

// findCandidates dry-runs preemption on the potential nodes from a
// random offset (so that concurrent schedulers and successive pods do
// not all pick the first nodes) until enough candidates are found.
func (pl *DefaultPreemption) findCandidates(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, potential []*framework.NodeInfo, numNodes int) ([]candidate, *framework.NodeToStatus) {
	statuses := framework.NewNodeToStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNotHelpful))
	if len(potential) == 0 {
		return nil, statuses
	}
	want := min(max(numNodes*minCandidateNodesPercentage/100, minCandidateNodesAbsolute), len(potential))
	offset := rand.IntN(len(potential))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var out []candidate
	pl.h.Parallelizer().Until(ctx, len(potential), func(i int) {
		ni := potential[(offset+i)%len(potential)]
		victims, s := pl.selectVictims(ctx, state.Clone(), pod, ni.Clone())
		mu.Lock()
		defer mu.Unlock()
		if s.IsSuccess() {
			out = append(out, candidate{node: ni.Name(), victims: victims})
			if len(out) >= want {
				cancel()
			}
			return
		}
		statuses.Set(ni.Name(), s)
	})
	return out, statuses
}
