package cache

import (
	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
)

// Snapshot is the cluster as one scheduling cycle sees it: NodeInfo
// copies that do not change while the cycle runs, whatever the informers
// deliver meanwhile. The cache refreshes it in place, copying only the
// nodes that changed since the last refresh.
type Snapshot struct {
	nodeInfoMap  map[string]*framework.NodeInfo
	nodeInfoList []*framework.NodeInfo
	withAffinity []*framework.NodeInfo
	withAnti     []*framework.NodeInfo
	generation   int64
}

var _ framework.NodeInfoLister = (*Snapshot)(nil)

// NewEmptySnapshot returns a snapshot for Cache.UpdateSnapshot to fill.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}}
}

// NewSnapshot builds a snapshot straight from objects, for tests and
// tools: pods are placed on the nodes their spec.nodeName names.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		ni := framework.NewNodeInfo(n)
		s.nodeInfoMap[n.Name] = ni
		s.nodeInfoList = append(s.nodeInfoList, ni)
	}
	for _, p := range pods {
		if ni, ok := s.nodeInfoMap[p.Spec.NodeName]; ok {
			ni.AddPod(framework.NewPodInfo(p))
		}
	}
	s.updateAffinityLists()
	return s
}

// List implements framework.NodeInfoLister.
func (s *Snapshot) List() []*framework.NodeInfo { return s.nodeInfoList }

// HavePodsWithAffinityList implements framework.NodeInfoLister.
func (s *Snapshot) HavePodsWithAffinityList() []*framework.NodeInfo { return s.withAffinity }

// HavePodsWithRequiredAntiAffinityList implements framework.NodeInfoLister.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo { return s.withAnti }

// Get implements framework.NodeInfoLister.
func (s *Snapshot) Get(name string) *framework.NodeInfo { return s.nodeInfoMap[name] }

// NumNodes is the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

func (s *Snapshot) updateAffinityLists() {
	s.withAffinity = s.withAffinity[:0]
	s.withAnti = s.withAnti[:0]
	for _, ni := range s.nodeInfoList {
		if len(ni.PodsWithAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.withAnti = append(s.withAnti, ni)
		}
	}
}
