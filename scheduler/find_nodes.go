package scheduler

import (
	"context"
	"sync"
	"sync/atomic"

	"cairn/scheduler/framework"
	"cairn/scheduler/framework/runtime"

	"k8s.io/apimachinery/pkg/util/sets"
)

// minFeasibleNodesToFind and minFeasibleNodesPercentageToFind bound how
// few nodes a cycle may stop at, as in Kubernetes.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// schedulePod picks a node for the pod, or returns a *framework.FitError
// saying why none fits.
func (s *Scheduler) schedulePod(ctx context.Context, fwk *runtime.Framework, state *framework.CycleState, pod *framework.PodInfo) (string, error) {
	all := s.snapshot.List()
	if len(all) == 0 {
		return "", errNoNodes
	}
	pfr, st := fwk.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", st.AsError()
		}
		return "", &framework.FitError{Pod: pod.Pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{
			NodeToStatus:         framework.NewNodeToStatus(st),
			UnschedulablePlugins: sets.New(st.Plugin()),
			PreFilterMsg:         st.Message(),
		}}
	}
	// A pod that preempted goes back to its nominated node if it fits
	// there now, without searching the others.
	if nn := pod.Pod.Status.NominatedNodeName; nn != "" {
		if ni := s.snapshot.Get(nn); ni != nil && fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess() {
			return nn, nil
		}
	}
	feasible, diag, err := s.findNodesThatFit(ctx, fwk, state, pod, all, pfr)
	if err != nil {
		return "", err
	}
	switch len(feasible) {
	case 0:
		return "", &framework.FitError{Pod: pod.Pod, NumAllNodes: len(all), Diagnosis: diag}
	case 1:
		return feasible[0].Name(), nil
	}
	if st := fwk.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return "", st.AsError()
	}
	scores, st := fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	return s.selectHost(feasible, scores), nil
}

// findNodesThatFit filters nodes, starting where the previous cycle
// stopped so every node gets its turn, until enough feasible nodes are
// found.
func (s *Scheduler) findNodesThatFit(ctx context.Context, fwk *runtime.Framework, state *framework.CycleState, pod *framework.PodInfo, all []*framework.NodeInfo, pfr *framework.PreFilterResult) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	diag := framework.Diagnosis{
		NodeToStatus:         framework.NewNodeToStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable)),
		UnschedulablePlugins: sets.New[string](),
	}
	nodes := all
	if pfr != nil && pfr.NodeNames != nil {
		nodes = make([]*framework.NodeInfo, 0, pfr.NodeNames.Len())
		for _, ni := range all {
			if pfr.NodeNames.Has(ni.Name()) {
				nodes = append(nodes, ni)
			}
		}
	}
	if len(nodes) == 0 {
		return nil, diag, nil
	}
	want := numFeasibleNodesToFind(s.cfg.PercentageOfNodesToScore, len(nodes))
	feasible := make([]*framework.NodeInfo, want)
	// Rejections are kept by position and turned into a map only when
	// nothing fits: most pods fit, and a map of thousands of nodes per
	// cycle would cost more than the filters.
	if cap(s.rejected) < len(nodes) {
		s.rejected = make([]*framework.Status, len(nodes))
	}
	rejected := s.rejected[:len(nodes)]
	defer clear(rejected)
	var found atomic.Int32
	var errOnce sync.Once
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := s.nextStartNodeIndex
	fwk.Parallelizer().Until(ctx, len(nodes), func(i int) {
		if ctx.Err() != nil {
			return
		}
		k := (start + i) % len(nodes)
		st := fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodes[k])
		switch {
		case st.IsSuccess():
			n := int(found.Add(1))
			if n > want {
				found.Add(-1)
				cancel()
				return
			}
			feasible[n-1] = nodes[k]
			if n == want {
				cancel()
			}
		case st.IsRejected():
			rejected[k] = st
		default:
			errOnce.Do(func() { firstErr = st.AsError() })
			cancel()
		}
	})
	if firstErr != nil {
		return nil, diag, firstErr
	}
	n := int(found.Load())
	processed := n
	for _, st := range rejected {
		if st != nil {
			processed++
			diag.UnschedulablePlugins.Insert(st.Plugin())
		}
	}
	if n == 0 {
		for k, st := range rejected {
			if st != nil {
				diag.NodeToStatus.Set(nodes[k].Name(), st)
			}
		}
	}
	s.nextStartNodeIndex = (start + processed) % len(nodes)
	return feasible[:n], diag, nil
}

// numFeasibleNodesToFind is how many feasible nodes are enough: all of
// them in small clusters, else the configured share of the nodes, where
// 0 means Kubernetes' adaptive share (50% minus 1% per 125 nodes, at
// least 5%), and never fewer than 100.
func numFeasibleNodesToFind(percentage int32, numNodes int) int {
	if numNodes < minFeasibleNodesToFind {
		return numNodes
	}
	p := int(percentage)
	if p == 0 {
		p = max(50-numNodes/125, minFeasibleNodesPercentageToFind)
	}
	if p >= 100 {
		return numNodes
	}
	return max(numNodes*p/100, minFeasibleNodesToFind)
}

// selectHost returns the best-scored node, breaking ties at random so
// equal nodes share the load.
func (s *Scheduler) selectHost(nodes []*framework.NodeInfo, scores []int64) string {
	best, ties := 0, 1
	for i := 1; i < len(nodes); i++ {
		switch {
		case scores[i] > scores[best]:
			best, ties = i, 1
		case scores[i] == scores[best]:
			ties++
			if s.rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best].Name()
}
