package interpodaffinity

import (
	"context"
	"sync"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

const preFilterKey framework.StateKey = "PreFilter" + names.InterPodAffinity

type preFilterState struct {
	// existingAnti counts existing pods whose required anti-affinity
	// terms select the incoming pod, per pair of their term.
	existingAnti map[topologyPair]int
	// affinity counts existing pods that match all of the incoming pod's
	// required affinity terms, per pair of each term.
	affinity map[topologyPair]int
	// anti counts existing pods matching each of the incoming pod's
	// required anti-affinity terms.
	anti map[topologyPair]int
}

// Clone implements framework.StateData.
func (s *preFilterState) Clone() framework.StateData {
	return &preFilterState{existingAnti: cloneCounts(s.existingAnti), affinity: cloneCounts(s.affinity), anti: cloneCounts(s.anti)}
}

func cloneCounts(m map[topologyPair]int) map[topologyPair]int {
	c := make(map[topologyPair]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// PreFilter implements framework.PreFilterPlugin. Pods without required
// terms skip the filter when no existing pod has required
// anti-affinity: then nothing can reject them.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	if pod.ParseErr != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.ParseErr.Error())
	}
	lister := pl.h.SnapshotSharedLister()
	withAnti := lister.HavePodsWithRequiredAntiAffinityList()
	if len(pod.RequiredAffinityTerms) == 0 && len(pod.RequiredAntiAffinityTerms) == 0 && len(withAnti) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{existingAnti: map[topologyPair]int{}, affinity: map[topologyPair]int{}, anti: map[topologyPair]int{}}
	for _, ni := range withAnti {
		for _, p := range ni.PodsWithRequiredAntiAffinity {
			pl.countExistingAnti(s, pod, p, ni, 1)
		}
	}
	if len(pod.RequiredAffinityTerms) > 0 || len(pod.RequiredAntiAffinityTerms) > 0 {
		nodes := lister.List()
		var mu sync.Mutex
		pl.h.Parallelizer().Until(ctx, len(nodes), func(i int) {
			ni := nodes[i]
			var local preFilterState
			for _, p := range ni.Pods {
				pl.countIncoming(&local, pod, p, ni, 1)
			}
			if len(local.affinity) == 0 && len(local.anti) == 0 {
				return
			}
			mu.Lock()
			for k, v := range local.affinity {
				s.affinity[k] += v
			}
			for k, v := range local.anti {
				s.anti[k] += v
			}
			mu.Unlock()
		})
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

// countExistingAnti adds delta for each of existing's required
// anti-affinity terms that select the incoming pod.
func (pl *InterPodAffinity) countExistingAnti(s *preFilterState, pod, existing *framework.PodInfo, ni *framework.NodeInfo, delta int) {
	labels := ni.Node().Labels
	for i := range existing.RequiredAntiAffinityTerms {
		t := &existing.RequiredAntiAffinityTerms[i]
		if v, ok := labels[t.TopologyKey]; ok && pl.termMatches(t, pod.Pod) {
			addCount(&s.existingAnti, topologyPair{t.TopologyKey, v}, delta)
		}
	}
}

// countIncoming adds delta for the incoming pod's required terms that
// existing matches.
func (pl *InterPodAffinity) countIncoming(s *preFilterState, pod, existing *framework.PodInfo, ni *framework.NodeInfo, delta int) {
	labels := ni.Node().Labels
	if pl.matchesAll(pod.RequiredAffinityTerms, existing.Pod) {
		for i := range pod.RequiredAffinityTerms {
			t := &pod.RequiredAffinityTerms[i]
			if v, ok := labels[t.TopologyKey]; ok {
				addCount(&s.affinity, topologyPair{t.TopologyKey, v}, delta)
			}
		}
	}
	for i := range pod.RequiredAntiAffinityTerms {
		t := &pod.RequiredAntiAffinityTerms[i]
		if v, ok := labels[t.TopologyKey]; ok && pl.termMatches(t, existing.Pod) {
			addCount(&s.anti, topologyPair{t.TopologyKey, v}, delta)
		}
	}
}

// addCount keeps only positive counts, so an empty map means "none",
// and allocates the map on first use: most nodes add nothing.
func addCount(m *map[topologyPair]int, k topologyPair, delta int) {
	n := (*m)[k] + delta
	if n <= 0 {
		delete(*m, k)
		return
	}
	if *m == nil {
		*m = map[topologyPair]int{}
	}
	(*m)[k] = n
}

func readPreFilter(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return nil, err
	}
	return d.(*preFilterState), nil
}

// AddPod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, add, ni, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, remove, ni, -1)
}

func (pl *InterPodAffinity) update(state *framework.CycleState, pod, other *framework.PodInfo, ni *framework.NodeInfo, delta int) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	pl.countExistingAnti(s, pod, other, ni, delta)
	pl.countIncoming(s, pod, other, ni, delta)
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	labels := ni.Node().Labels
	if !pl.satisfiesAffinity(s, pod, labels) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	for i := range pod.RequiredAntiAffinityTerms {
		t := &pod.RequiredAntiAffinityTerms[i]
		if v, ok := labels[t.TopologyKey]; ok && s.anti[topologyPair{t.TopologyKey, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	for pair := range s.existingAnti {
		if v, ok := labels[pair.key]; ok && v == pair.value {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	return nil
}

// satisfiesAffinity checks the required affinity terms on a node. When
// no pod in the cluster matches them and the pod matches them itself, it
// is the first of its group and may go anywhere that has the topology
// keys; otherwise the group could never start.
func (pl *InterPodAffinity) satisfiesAffinity(s *preFilterState, pod *framework.PodInfo, labels map[string]string) bool {
	terms := pod.RequiredAffinityTerms
	if len(terms) == 0 {
		return true
	}
	found := true
	for i := range terms {
		v, ok := labels[terms[i].TopologyKey]
		if !ok {
			return false
		}
		if s.affinity[topologyPair{terms[i].TopologyKey, v}] <= 0 {
			found = false
		}
	}
	if found {
		return true
	}
	return len(s.affinity) == 0 && pl.matchesAll(terms, pod.Pod)
}
