package runtime

import (
	"context"
	"fmt"
	"sync"

	"cairn/scheduler/framework"

	"k8s.io/apimachinery/pkg/util/sets"
)

// RunPreFilterPlugins runs every PreFilter. Plugins returning Skip are
// recorded in state so their Filter is not called for this pod. The
// results of plugins that narrow the node set are intersected.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	var result *framework.PreFilterResult
	skip := sets.New[string]()
	for _, pl := range f.preFilter {
		r, s := pl.PreFilter(ctx, state, pod)
		switch {
		case s.IsSkip():
			skip.Insert(pl.Name())
			continue
		case s.IsRejected():
			return nil, s.WithPlugin(pl.Name())
		case !s.IsSuccess():
			return nil, framework.AsStatus(fmt.Errorf("runtime: PreFilter plugin %s: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
		if r == nil || r.NodeNames == nil {
			continue
		}
		if result == nil {
			result = &framework.PreFilterResult{NodeNames: r.NodeNames.Clone()}
		} else {
			result.NodeNames = result.NodeNames.Intersection(r.NodeNames)
		}
		if result.NodeNames.Len() == 0 {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s]", pl.Name())).WithPlugin(pl.Name())
		}
	}
	state.SkipFilterPlugins = skip
	state.Write(cycleKey, f.newCycle(state))
	return result, nil
}

// cycleKey holds what every node's filtering needs from the runtime,
// read with one state lookup per node.
const cycleKey framework.StateKey = "runtime/cycle"

// cycle is the runtime's per-cycle data: the filters not skipped, and
// the nominations as they were when the cycle began (asking the queue
// for every node would contend on its lock).
type cycle struct {
	filters   []framework.FilterPlugin
	nominated map[string][]*framework.PodInfo
}

// Clone implements framework.StateData.
func (c *cycle) Clone() framework.StateData { return c }

func (f *Framework) newCycle(state *framework.CycleState) *cycle {
	c := &cycle{filters: make([]framework.FilterPlugin, 0, len(f.filter))}
	for _, pl := range f.filter {
		if !state.SkipFilterPlugins.Has(pl.Name()) {
			c.filters = append(c.filters, pl)
		}
	}
	if f.opts.Nominator != nil {
		c.nominated = f.opts.Nominator.NominatedPods()
	}
	return c
}

// cycleOf returns the cycle data, computing it when PreFilter did not
// run (callers outside a scheduling cycle).
func (f *Framework) cycleOf(state *framework.CycleState) *cycle {
	if d, err := state.Read(cycleKey); err == nil {
		return d.(*cycle)
	}
	return f.newCycle(state)
}

// RunFilterPlugins runs the filters on one node and returns the first
// rejection.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	for _, pl := range f.cycleOf(state).filters {
		s := pl.Filter(ctx, state, pod, node)
		if s.IsSuccess() {
			continue
		}
		if !s.IsRejected() {
			s = framework.AsStatus(fmt.Errorf("runtime: Filter plugin %s: %w", pl.Name(), s.AsError()))
		}
		return s.WithPlugin(pl.Name())
	}
	return nil
}

// RunFilterPluginsWithNominatedPods runs the filters on node as if the
// pods nominated to it with at least pod's priority were already there,
// then (if they pass) without them: a nominated pod may never arrive, and
// some filters (pod affinity) can pass only with it.
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	nodeWith, stateWith, added, s := f.addNominatedPods(ctx, state, pod, node)
	if !s.IsSuccess() {
		return s
	}
	if added {
		if s := f.RunFilterPlugins(ctx, stateWith, pod, nodeWith); !s.IsSuccess() {
			return s
		}
	}
	return f.RunFilterPlugins(ctx, state, pod, node)
}

func (f *Framework) addNominatedPods(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (*framework.NodeInfo, *framework.CycleState, bool, *framework.Status) {
	all := f.cycleOf(state).nominated
	if len(all) == 0 || node.Node() == nil {
		return node, state, false, nil
	}
	nominated := all[node.Name()]
	if len(nominated) == 0 {
		return node, state, false, nil
	}
	var nodeOut *framework.NodeInfo
	var stateOut *framework.CycleState
	for _, p := range nominated {
		if p.Priority < pod.Priority || p.Pod.UID == pod.Pod.UID {
			continue
		}
		if nodeOut == nil {
			nodeOut, stateOut = node.Clone(), state.Clone()
		}
		nodeOut.AddPod(p)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, p, nodeOut); !s.IsSuccess() {
			return nil, nil, false, s
		}
	}
	if nodeOut == nil {
		return node, state, false, nil
	}
	return nodeOut, stateOut, true, nil
}

// RunPreFilterExtensionAddPod implements framework.Handle.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	for _, pl := range f.preFilter {
		ext, ok := pl.(framework.PreFilterExtensions)
		if !ok || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.AddPod(ctx, state, pod, add, node); !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("runtime: %s AddPod: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod implements framework.Handle.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, pod, remove *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	for _, pl := range f.preFilter {
		ext, ok := pl.(framework.PreFilterExtensions)
		if !ok || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.RemovePod(ctx, state, pod, remove, node); !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("runtime: %s RemovePod: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunPostFilterPlugins runs the PostFilter plugins until one makes room.
// When none does, their messages are joined.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, statuses *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	var result *framework.PostFilterResult
	var reasons []string
	for _, pl := range f.postFilter {
		r, s := pl.PostFilter(ctx, state, pod, statuses)
		if s.IsSuccess() {
			return r, s
		}
		if !s.IsRejected() {
			return r, s.WithPlugin(pl.Name())
		}
		if r != nil && result == nil {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
	}
	return result, framework.NewStatus(framework.Unschedulable, reasons...)
}

// RunPreScorePlugins runs every PreScore; plugins returning Skip are not
// scored for this pod.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo) *framework.Status {
	skip := sets.New[string]()
	for _, pl := range f.preScore {
		s := pl.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("runtime: PreScore plugin %s: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

// RunScorePlugins scores nodes with every score plugin not skipped,
// normalizes each plugin's scores, and returns each node's weighted sum.
func (f *Framework) RunScorePlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo) ([]int64, *framework.Status) {
	var active []framework.ScorePlugin
	for _, pl := range f.score {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	totals := make([]int64, len(nodes))
	if len(active) == 0 {
		return totals, nil
	}
	scores := make([][]framework.NodeScore, len(active))
	for j := range scores {
		scores[j] = make([]framework.NodeScore, len(nodes))
	}
	var mu sync.Mutex
	var first *framework.Status
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		for j, pl := range active {
			s, st := pl.Score(ctx, state, pod, nodes[i])
			if !st.IsSuccess() {
				mu.Lock()
				if first == nil {
					first = framework.AsStatus(fmt.Errorf("runtime: Score plugin %s: %w", pl.Name(), st.AsError())).WithPlugin(pl.Name())
				}
				mu.Unlock()
				cancel()
				return
			}
			scores[j][i] = framework.NodeScore{Name: nodes[i].Name(), Score: s}
		}
	})
	if first != nil {
		return nil, first
	}
	for j, pl := range active {
		if ext := pl.ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, state, pod, scores[j]); !s.IsSuccess() {
				return nil, framework.AsStatus(fmt.Errorf("runtime: NormalizeScore of %s: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
			}
		}
		w := f.weights[pl.Name()]
		for i, ns := range scores[j] {
			if ns.Score < 0 || ns.Score > framework.MaxNodeScore {
				return nil, framework.AsStatus(fmt.Errorf("runtime: plugin %s scored node %s %d, outside [0, %d]", pl.Name(), ns.Name, ns.Score, framework.MaxNodeScore)).WithPlugin(pl.Name())
			}
			totals[i] += ns.Score * w
		}
	}
	return totals, nil
}

// RunReservePluginsReserve reserves nodeName for the pod with every
// Reserve plugin, stopping at the first failure.
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodeName string) *framework.Status {
	for _, pl := range f.reserve {
		if s := pl.Reserve(ctx, state, pod, nodeName); !s.IsSuccess() {
			if !s.IsRejected() {
				s = framework.AsStatus(fmt.Errorf("runtime: Reserve plugin %s: %w", pl.Name(), s.AsError()))
			}
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunReservePluginsUnreserve undoes Reserve, in reverse order.
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodeName string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunBindPlugins binds the pod with the first bind plugin that does not
// skip it.
func (f *Framework) RunBindPlugins(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodeName string) *framework.Status {
	for _, pl := range f.bind {
		s := pl.Bind(ctx, state, pod, nodeName)
		if s.IsSkip() {
			continue
		}
		return s.WithPlugin(pl.Name())
	}
	return framework.AsStatus(errNoBinder)
}
