package interpodaffinity

import (
	"context"
	"math"
	"sync"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

const preScoreKey framework.StateKey = "PreScore" + names.InterPodAffinity

// preScoreState holds the summed term weights per topology key and
// value; a node scores the sum over its own labels.
type preScoreState struct {
	scores map[string]map[string]int64
}

// Clone implements framework.StateData.
func (s *preScoreState) Clone() framework.StateData { return s }

func (s *preScoreState) add(key, value string, w int64) {
	if s.scores == nil {
		s.scores = map[string]map[string]int64{}
	}
	m, ok := s.scores[key]
	if !ok {
		m = map[string]int64{}
		s.scores[key] = m
	}
	m[value] += w
}

// PreScore implements framework.PreScorePlugin. Both sides count: the
// incoming pod's preferred terms against existing pods, and existing
// pods' terms (required affinity at weight 1, preferred ones at their
// weight) against the incoming pod.
func (pl *InterPodAffinity) PreScore(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	if pod.ParseErr != nil {
		return framework.AsStatus(pod.ParseErr)
	}
	lister := pl.h.SnapshotSharedLister()
	hasPreferred := len(pod.PreferredAffinityTerms) > 0 || len(pod.PreferredAntiAffinityTerms) > 0
	nodes := lister.HavePodsWithAffinityList()
	if hasPreferred {
		nodes = lister.List()
	}
	if len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{scores: map[string]map[string]int64{}}
	var mu sync.Mutex
	pl.h.Parallelizer().Until(ctx, len(nodes), func(i int) {
		ni := nodes[i]
		pods := ni.PodsWithAffinity
		if hasPreferred {
			pods = ni.Pods
		}
		var local preScoreState
		for _, p := range pods {
			pl.scoreExisting(&local, pod, p, ni.Node().Labels)
		}
		if len(local.scores) == 0 {
			return
		}
		mu.Lock()
		for k, m := range local.scores {
			for v, w := range m {
				s.add(k, v, w)
			}
		}
		mu.Unlock()
	})
	state.Write(preScoreKey, s)
	return nil
}

func (pl *InterPodAffinity) scoreExisting(s *preScoreState, pod, existing *framework.PodInfo, labels map[string]string) {
	add := func(key string, w int64) {
		if v, ok := labels[key]; ok && w != 0 {
			s.add(key, v, w)
		}
	}
	for i := range pod.PreferredAffinityTerms {
		t := &pod.PreferredAffinityTerms[i]
		if pl.termMatches(&t.AffinityTerm, existing.Pod) {
			add(t.TopologyKey, int64(t.Weight))
		}
	}
	for i := range pod.PreferredAntiAffinityTerms {
		t := &pod.PreferredAntiAffinityTerms[i]
		if pl.termMatches(&t.AffinityTerm, existing.Pod) {
			add(t.TopologyKey, -int64(t.Weight))
		}
	}
	if !existing.HasAffinity() {
		return
	}
	for i := range existing.RequiredAffinityTerms {
		t := &existing.RequiredAffinityTerms[i]
		if pl.termMatches(t, pod.Pod) {
			add(t.TopologyKey, hardPodAffinityWeight)
		}
	}
	for i := range existing.PreferredAffinityTerms {
		t := &existing.PreferredAffinityTerms[i]
		if pl.termMatches(&t.AffinityTerm, pod.Pod) {
			add(t.TopologyKey, int64(t.Weight))
		}
	}
	for i := range existing.PreferredAntiAffinityTerms {
		t := &existing.PreferredAntiAffinityTerms[i]
		if pl.termMatches(&t.AffinityTerm, pod.Pod) {
			add(t.TopologyKey, -int64(t.Weight))
		}
	}
}

// Score implements framework.ScorePlugin.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var score int64
	labels := ni.Node().Labels
	for key, m := range d.(*preScoreState).scores {
		if v, ok := labels[key]; ok {
			score += m[v]
		}
	}
	return score, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: scores may be
// negative (anti-affinity), so they are rescaled from [min, max].
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	lowest, highest := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lowest = min(lowest, s.Score)
		highest = max(highest, s.Score)
	}
	diff := highest - lowest
	for i := range scores {
		if diff > 0 {
			scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lowest) / diff
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}
