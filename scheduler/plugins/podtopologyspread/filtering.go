package podtopologyspread

import (
	"context"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

const preFilterKey framework.StateKey = "PreFilter" + names.PodTopologySpread

// preFilterState counts, per DoNotSchedule constraint, the matching pods
// in each eligible domain, and keeps each constraint's minimum so that
// Filter is O(constraints) per node.
type preFilterState struct {
	constraints []constraint
	selfMatch   []bool
	counts      []map[string]int
	mins        []int
}

// Clone implements framework.StateData.
func (s *preFilterState) Clone() framework.StateData {
	c := &preFilterState{constraints: s.constraints, selfMatch: s.selfMatch, mins: append([]int(nil), s.mins...)}
	c.counts = make([]map[string]int, len(s.counts))
	for i, m := range s.counts {
		c.counts[i] = make(map[string]int, len(m))
		for k, v := range m {
			c.counts[i][k] = v
		}
	}
	return c
}

// updateMins recomputes each constraint's global minimum. With fewer
// domains than minDomains the minimum is 0, as Kubernetes defines it.
func (s *preFilterState) updateMins() {
	for i, m := range s.counts {
		if int32(len(m)) < s.constraints[i].minDomains {
			s.mins[i] = 0
			continue
		}
		lowest := -1
		for _, n := range m {
			if lowest < 0 || n < lowest {
				lowest = n
			}
		}
		s.mins[i] = max(lowest, 0)
	}
}

// PreFilter implements framework.PreFilterPlugin.
func (p *PodTopologySpread) PreFilter(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	cs, err := buildConstraints(pod.Pod, v1.DoNotSchedule)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, selfMatch: make([]bool, len(cs)), counts: make([]map[string]int, len(cs)), mins: make([]int, len(cs))}
	for i := range cs {
		s.selfMatch[i] = cs[i].selector.Matches(pod.Pod.Labels)
		s.counts[i] = map[string]int{}
	}
	nodes := p.h.SnapshotSharedLister().List()
	// perNode[i*len(cs)+j] is node i's count for constraint j, -1 when
	// the node is not part of that constraint's domains.
	perNode := make([]int, len(nodes)*len(cs))
	p.h.Parallelizer().Until(ctx, len(nodes), func(i int) {
		row := perNode[i*len(cs) : (i+1)*len(cs)]
		countNode(row, cs, pod, nodes[i])
	})
	for i, ni := range nodes {
		labels := ni.Node().Labels
		for j := range cs {
			if n := perNode[i*len(cs)+j]; n >= 0 {
				s.counts[j][labels[cs[j].topologyKey]] += n
			}
		}
	}
	s.updateMins()
	state.Write(preFilterKey, s)
	return nil, nil
}

// countNode fills row with the node's matching pods per constraint, or
// -1 where the node belongs to no domain of that constraint.
func countNode(row []int, cs []constraint, pod *framework.PodInfo, ni *framework.NodeInfo) {
	node := ni.Node()
	if !hasAllKeys(node, cs) {
		for j := range row {
			row[j] = -1
		}
		return
	}
	for j := range cs {
		if !cs[j].eligible(pod, node) {
			row[j] = -1
			continue
		}
		if len(ni.Pods) == 0 {
			row[j] = 0
			continue
		}
		row[j] = countMatching(ni.Pods, &cs[j].selector, pod.Pod.Namespace)
	}
}

func readPreFilter(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return nil, err
	}
	return d.(*preFilterState), nil
}

// AddPod implements framework.PreFilterExtensions.
func (p *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return update(state, pod, add, node, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (p *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return update(state, pod, remove, node, -1)
}

func update(state *framework.CycleState, pod, other *framework.PodInfo, ni *framework.NodeInfo, delta int) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	if other.Pod.Namespace != pod.Pod.Namespace || !hasAllKeys(node, s.constraints) {
		return nil
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		if c.eligible(pod, node) && c.selector.Matches(other.Pod.Labels) {
			s.counts[i][node.Labels[c.topologyKey]] += delta
		}
	}
	s.updateMins()
	return nil
}

// Filter implements framework.FilterPlugin.
func (p *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.topologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if s.selfMatch[i] {
			self = 1
		}
		if s.counts[i][v]+self-s.mins[i] > int(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
