package scheduler

import (
	"context"
	"fmt"
	"testing"

	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNumFeasibleNodesToFindIsKubernetesAdaptive(t *testing.T) {
	tests := []struct {
		percentage int32
		nodes      int
		want       int
	}{
		{0, 50, 50},
		{0, 100, 100},
		{0, 500, 230},
		{0, 5000, 500},
		{0, 10000, 500},
		{0, 200, 100},
		{30, 1000, 300},
		{1, 1000, 100},
		{100, 1000, 1000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d%% of %d", tt.percentage, tt.nodes), func(t *testing.T) {
			if got := numFeasibleNodesToFind(tt.percentage, tt.nodes); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func newTestScheduler(t testing.TB, nodes int, cpu string) *Scheduler {
	t.Helper()
	s, err := New(Config{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		s.cache.AddNode(st.MakeNode().Name(fmt.Sprintf("n%04d", i)).Capacity(st.Res{"cpu": cpu}).Obj())
	}
	s.cache.UpdateSnapshot(s.snapshot)
	return s
}

func TestEachCycleStartsWhereThePreviousStopped(t *testing.T) {
	s := newTestScheduler(t, 500, "1")
	fwk := s.profiles[config.DefaultSchedulerName].fwk
	pod := framework.NewPodInfo(st.MakePod().Name("p").Req(st.Res{"cpu": "100m"}).Obj())
	for round, wantStart := range []int{0, 230, 460, 190} {
		if s.nextStartNodeIndex != wantStart {
			t.Fatalf("round %d starts at %d, want %d", round, s.nextStartNodeIndex, wantStart)
		}
		state := framework.NewCycleState()
		pfr, st := fwk.RunPreFilterPlugins(context.Background(), state, pod)
		if !st.IsSuccess() {
			t.Fatal(st.AsError())
		}
		feasible, _, err := s.findNodesThatFit(context.Background(), fwk, state, pod, s.snapshot.List(), pfr)
		if err != nil {
			t.Fatal(err)
		}
		if len(feasible) != 230 {
			t.Fatalf("found %d feasible nodes, want 230 (46%% of 500)", len(feasible))
		}
	}
}

func TestUnschedulablePodIsCheckedOnEveryNode(t *testing.T) {
	s := newTestScheduler(t, 300, "1")
	fwk := s.profiles[config.DefaultSchedulerName].fwk
	pod := framework.NewPodInfo(st.MakePod().Name("p").Req(st.Res{"cpu": "2"}).Obj())
	_, err := s.schedulePod(context.Background(), fwk, framework.NewCycleState(), pod)
	fe, ok := err.(*framework.FitError)
	if !ok {
		t.Fatalf("error %v is not a FitError", err)
	}
	if got, want := fe.Error(), "0/300 nodes are available: 300 Insufficient cpu."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !fe.Diagnosis.UnschedulablePlugins.Has("NodeResourcesFit") {
		t.Errorf("rejecting plugins = %v", fe.Diagnosis.UnschedulablePlugins)
	}
}

func TestSelectHostSpreadsTies(t *testing.T) {
	s := newTestScheduler(t, 3, "1")
	nodes := s.snapshot.List()
	seen := map[string]int{}
	for range 300 {
		seen[s.selectHost(nodes, []int64{5, 9, 9})]++
	}
	if seen["n0000"] != 0 || seen["n0001"] < 100 || seen["n0002"] < 100 {
		t.Errorf("picks = %v, want only the two best, about evenly", seen)
	}
}

func TestMetricsSurviveANewSchedulerOnTheSameRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	gathered := func() map[string]bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, mf := range mfs {
			found[mf.GetName()] = true
		}
		return found
	}
	for range 2 {
		s, err := New(Config{Client: fake.NewClientset(), Metrics: reg})
		if err != nil {
			t.Fatal(err)
		}
		s.metrics.observe(config.DefaultSchedulerName, resultScheduled, 0)
		if err := s.metrics.registerPending(); err != nil {
			t.Fatal(err)
		}
		if found := gathered(); !found["cairn_scheduler_pending_pods"] || !found["cairn_scheduler_schedule_attempts_total"] {
			t.Errorf("metrics = %v", found)
		}
		s.metrics.unregister()
	}
	if gathered()["cairn_scheduler_pending_pods"] {
		t.Error("a stopped scheduler still reports pending pods")
	}
}
