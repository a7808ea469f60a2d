package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"cairn/scheduler/cache"
	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	"cairn/scheduler/framework/runtime"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

// probe is a test plugin for every phase; it records calls in log.
type probe struct {
	name      string
	log       *[]string
	preFilter *framework.Status
	filter    map[string]*framework.Status
	score     map[string]int64
	reserve   *framework.Status
	bind      *framework.Status
}

func (p *probe) Name() string { return p.name }
func (p *probe) PreFilter(context.Context, *framework.CycleState, *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	*p.log = append(*p.log, p.name+".PreFilter")
	return nil, p.preFilter
}
func (p *probe) Filter(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	*p.log = append(*p.log, p.name+".Filter")
	return p.filter[n.Node().Name]
}
func (p *probe) Score(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	return p.score[n.Node().Name], nil
}
func (p *probe) ScoreExtensions() framework.ScoreExtensions { return p }
func (p *probe) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, s []framework.NodeScore) *framework.Status {
	framework.NormalizeScores(s, false)
	return nil
}
func (p *probe) Reserve(context.Context, *framework.CycleState, *framework.PodInfo, string) *framework.Status {
	*p.log = append(*p.log, p.name+".Reserve")
	return p.reserve
}
func (p *probe) Unreserve(context.Context, *framework.CycleState, *framework.PodInfo, string) {
	*p.log = append(*p.log, p.name+".Unreserve")
}
func (p *probe) Bind(context.Context, *framework.CycleState, *framework.PodInfo, string) *framework.Status {
	*p.log = append(*p.log, p.name+".Bind")
	return p.bind
}

// newFramework builds a profile of the queue sort plus probes a and b.
func newFramework(t *testing.T, a, b *probe, weights ...int32) *runtime.Framework {
	t.Helper()
	reg := plugins.NewRegistry()
	reg["A"] = func(framework.Handle) (framework.Plugin, error) { return a, nil }
	reg["B"] = func(framework.Handle) (framework.Plugin, error) { return b, nil }
	wa, wb := int32(1), int32(1)
	if len(weights) == 2 {
		wa, wb = weights[0], weights[1]
	}
	prof := config.Profile{SchedulerName: "test", Plugins: config.Plugins{
		Disabled: []config.Plugin{{Name: "*"}},
		Enabled:  []config.Plugin{{Name: names.PrioritySort}, {Name: "A", Weight: wa}, {Name: "B", Weight: wb}},
	}}
	snap := cache.NewSnapshot(nil, nil)
	fwk, err := runtime.New(reg, prof, runtime.Options{Snapshot: snap, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	return fwk
}

func TestDefaultProfileRunsEveryBuiltInPlugin(t *testing.T) {
	fwk, err := runtime.New(plugins.NewRegistry(), config.Profile{SchedulerName: config.DefaultSchedulerName}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fwk.Plugins(), names.All(); !slices.Equal(got, want) {
		t.Errorf("plugins = %v, want %v", got, want)
	}
	if !fwk.HasPostFilterPlugins() {
		t.Error("no preemption")
	}
}

func TestNewRefusesProfilesWithoutQueueSortOrBinder(t *testing.T) {
	for _, disabled := range []string{names.PrioritySort, names.DefaultBinder} {
		t.Run(disabled, func(t *testing.T) {
			prof := config.Profile{SchedulerName: "x", Plugins: config.Plugins{Disabled: []config.Plugin{{Name: disabled}}}}
			if _, err := runtime.New(plugins.NewRegistry(), prof, runtime.Options{}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestPreFilterSkipSkipsTheFilter(t *testing.T) {
	var log []string
	a := &probe{name: "A", log: &log, preFilter: framework.NewStatus(framework.Skip)}
	b := &probe{name: "B", log: &log}
	fwk := newFramework(t, a, b)
	state := framework.NewCycleState()
	pod := framework.NewPodInfo(st.MakePod().Name("p").Obj())
	if _, s := fwk.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	node := framework.NewNodeInfo(st.MakeNode().Name("n").Obj())
	if s := fwk.RunFilterPlugins(context.Background(), state, pod, node); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	if want := []string{"A.PreFilter", "B.PreFilter", "B.Filter"}; !slices.Equal(log, want) {
		t.Errorf("calls = %v, want %v", log, want)
	}
}

func TestFilterReportsTheFirstRejectionWithItsPlugin(t *testing.T) {
	var log []string
	a := &probe{name: "A", log: &log, filter: map[string]*framework.Status{"n": framework.NewStatus(framework.Unschedulable, "no")}}
	b := &probe{name: "B", log: &log, filter: map[string]*framework.Status{"n": framework.NewStatus(framework.Unschedulable, "never")}}
	fwk := newFramework(t, a, b)
	state := framework.NewCycleState()
	s := fwk.RunFilterPlugins(context.Background(), state, framework.NewPodInfo(st.MakePod().Obj()), framework.NewNodeInfo(st.MakeNode().Name("n").Obj()))
	if s.Plugin() != "A" || s.Message() != "no" || len(log) != 1 {
		t.Errorf("status %q from %q after %v", s.Message(), s.Plugin(), log)
	}
}

func TestScoresAreNormalizedThenWeighted(t *testing.T) {
	var log []string
	a := &probe{name: "A", log: &log, score: map[string]int64{"n1": 1, "n2": 2}}
	b := &probe{name: "B", log: &log, score: map[string]int64{"n1": 10, "n2": 5}}
	fwk := newFramework(t, a, b, 1, 3)
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(st.MakeNode().Name("n1").Obj()), framework.NewNodeInfo(st.MakeNode().Name("n2").Obj())}
	state := framework.NewCycleState()
	totals, s := fwk.RunScorePlugins(context.Background(), state, framework.NewPodInfo(st.MakePod().Obj()), nodes)
	if !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	// A: 50, 100 (weight 1); B: 100, 50 (weight 3).
	if want := []int64{350, 250}; !slices.Equal(totals, want) {
		t.Errorf("totals = %v, want %v", totals, want)
	}
}

func TestFailedReserveIsUndoneInReverseOrder(t *testing.T) {
	var log []string
	a := &probe{name: "A", log: &log}
	b := &probe{name: "B", log: &log, reserve: framework.NewStatus(framework.Unschedulable, "full")}
	fwk := newFramework(t, a, b)
	state := framework.NewCycleState()
	pod := framework.NewPodInfo(st.MakePod().Obj())
	s := fwk.RunReservePluginsReserve(context.Background(), state, pod, "n")
	if s.Plugin() != "B" {
		t.Fatalf("reserve status from %q", s.Plugin())
	}
	fwk.RunReservePluginsUnreserve(context.Background(), state, pod, "n")
	if want := []string{"A.Reserve", "B.Reserve", "B.Unreserve", "A.Unreserve"}; !slices.Equal(log, want) {
		t.Errorf("calls = %v, want %v", log, want)
	}
}

func TestBindFallsThroughSkippingBinders(t *testing.T) {
	var log []string
	a := &probe{name: "A", log: &log, bind: framework.NewStatus(framework.Skip)}
	b := &probe{name: "B", log: &log, bind: framework.AsStatus(errors.New("boom"))}
	fwk := newFramework(t, a, b)
	s := fwk.RunBindPlugins(context.Background(), framework.NewCycleState(), framework.NewPodInfo(st.MakePod().Obj()), "n")
	if s.Plugin() != "B" || s.Code() != framework.Error {
		t.Errorf("bind status %v from %q", s.Code(), s.Plugin())
	}
}

func TestNominatedPodsAreCountedForLowerPriorityPods(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(st.Res{"cpu": "2"}).Obj()
	nominated := framework.NewPodInfo(st.MakePod().Name("nominated").Priority(10).Req(st.Res{"cpu": "2"}).Obj())
	nom := &fixedNominator{pods: map[string][]*framework.PodInfo{"n": {nominated}}}
	c := st.NewCluster(t, nil, []*v1.Node{node}, st.WithNominator(nom))
	ni := c.Node(t, "n")
	for _, tt := range []struct {
		name     string
		priority int32
		fits     bool
	}{
		{"lower priority waits", 5, false},
		{"higher priority ignores the nomination", 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := framework.NewPodInfo(st.MakePod().Name("p").Priority(tt.priority).Req(st.Res{"cpu": "1"}).Obj())
			state := framework.NewCycleState()
			if _, s := c.Framework.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
				t.Fatal(s.AsError())
			}
			s := c.Framework.RunFilterPluginsWithNominatedPods(context.Background(), state, pod, ni)
			if s.IsSuccess() != tt.fits {
				t.Errorf("fits = %v (%s), want %v", s.IsSuccess(), s.Message(), tt.fits)
			}
		})
	}
}

type fixedNominator struct {
	pods map[string][]*framework.PodInfo
}

func (n *fixedNominator) NominatedPods() map[string][]*framework.PodInfo        { return n.pods }
func (n *fixedNominator) NominatedPodsForNode(node string) []*framework.PodInfo { return n.pods[node] }
func (n *fixedNominator) AddNominatedPod(*framework.PodInfo, string)            {}
func (n *fixedNominator) DeleteNominatedPodIfExists(*v1.Pod)                    {}
