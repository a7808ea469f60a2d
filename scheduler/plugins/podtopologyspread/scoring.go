package podtopologyspread

import (
	"context"
	"math"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

const preScoreKey framework.StateKey = "PreScore" + names.PodTopologySpread

// preScoreState counts, per ScheduleAnyway constraint, the matching pods
// in each domain that some feasible node belongs to.
type preScoreState struct {
	constraints []constraint
	counts      []map[string]int
	// weights favour constraints over few domains less: log(domains+2).
	weights []float64
	// ignored are feasible nodes missing a topology key: they score 0.
	ignored map[string]bool
}

// Clone implements framework.StateData.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin.
func (p *PodTopologySpread) PreScore(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, filtered []*framework.NodeInfo) *framework.Status {
	cs, err := buildConstraints(pod.Pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, counts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs)), ignored: map[string]bool{}}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	onlyHostname := true
	for _, ni := range filtered {
		node := ni.Node()
		if !hasAllKeys(node, cs) {
			s.ignored[node.Name] = true
			continue
		}
		for i := range cs {
			s.counts[i][node.Labels[cs[i].topologyKey]] = 0
		}
	}
	for i := range cs {
		s.weights[i] = math.Log(float64(len(s.counts[i]) + 2))
		if cs[i].topologyKey != v1.LabelHostname {
			onlyHostname = false
		}
	}
	// Per-node domains only need the feasible nodes; wider domains take
	// pods from every node in them.
	nodes := filtered
	if !onlyHostname {
		nodes = p.h.SnapshotSharedLister().List()
	}
	perNode := make([]int, len(nodes)*len(cs))
	p.h.Parallelizer().Until(ctx, len(nodes), func(i int) {
		node := nodes[i].Node()
		row := perNode[i*len(cs) : (i+1)*len(cs)]
		all := hasAllKeys(node, cs)
		for j := range cs {
			if _, tracked := s.counts[j][node.Labels[cs[j].topologyKey]]; !all || !tracked || !cs[j].eligible(pod, node) {
				row[j] = 0
				continue
			}
			row[j] = countMatching(nodes[i].Pods, &cs[j].selector, pod.Pod.Namespace)
		}
	})
	for i, ni := range nodes {
		for j := range cs {
			if n := perNode[i*len(cs)+j]; n > 0 {
				s.counts[j][ni.Node().Labels[cs[j].topologyKey]] += n
			}
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements framework.ScorePlugin: the raw score grows with the
// matching pods already in the node's domains (lower is better until
// normalized).
func (p *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s := d.(*preScoreState)
	node := ni.Node()
	if s.ignored[node.Name] {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		score += float64(s.counts[i][node.Labels[c.topologyKey]])*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (p *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions: the node with the
// fewest matching pods gets MaxNodeScore; ignored nodes get 0.
func (p *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := d.(*preScoreState)
	lowest, highest := int64(math.MaxInt64), int64(0)
	for _, ns := range scores {
		if s.ignored[ns.Name] {
			continue
		}
		lowest = min(lowest, ns.Score)
		highest = max(highest, ns.Score)
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Name]:
			scores[i].Score = 0
		case highest == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (highest + lowest - scores[i].Score) / highest
		}
	}
	return nil
}
