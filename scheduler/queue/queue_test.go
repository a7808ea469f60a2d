package queue

import (
	"context"
	"testing"
	"time"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/names"
	"cairn/scheduler/plugins/queuesort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	nodeAdd        = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}
	nodeLabel      = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel}
	assignedDelete = framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}
)

func newQueue(t *testing.T) (*Queue, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q := New(Config{
		Less:               queuesort.PrioritySort{}.Less,
		Clock:              clk,
		InitialBackoff:     time.Second,
		MaxBackoff:         10 * time.Second,
		MaxInUnschedulable: 5 * time.Minute,
		PluginEvents: map[string][]framework.ClusterEvent{
			names.NodeResourcesFit: {assignedDelete, {Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable}},
			names.NodeAffinity:     {{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}},
		},
	})
	return q, clk
}

// fail pops the next pod and puts it back as rejected by plugin.
func fail(t *testing.T, q *Queue, plugin string) *framework.QueuedPodInfo {
	t.Helper()
	p, err := q.Pop()
	if err != nil {
		t.Fatal(err)
	}
	cycle := q.SchedulingCycle()
	if plugin != "" {
		p.UnschedulablePlugins = sets.New(plugin)
	}
	q.AddUnschedulableIfNotPresent(p, cycle)
	return p
}

func counts(q *Queue) [3]int {
	a, b, u := q.Counts()
	return [3]int{a, b, u}
}

func TestActiveQueueOrdersByPriorityThenAge(t *testing.T) {
	q, _ := newQueue(t)
	old := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	q.Add(st.MakePod().Name("young-low").Created(old.Add(time.Hour)).Obj())
	q.Add(st.MakePod().Name("old-low").Created(old).Obj())
	q.Add(st.MakePod().Name("high").Priority(100).Created(old.Add(2 * time.Hour)).Obj())
	var got []string
	for range 3 {
		p, err := q.Pop()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Pod.Name)
	}
	if want := []string{"high", "old-low", "young-low"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestBackoffDoublesUpToTheMaximum(t *testing.T) {
	q, _ := newQueue(t)
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 30: 10 * time.Second} {
		if got := q.backoffDuration(attempts); got != want {
			t.Errorf("attempt %d: backoff %s, want %s", attempts, got, want)
		}
	}
}

func TestErroredPodRetriesAfterBackoff(t *testing.T) {
	q, clk := newQueue(t)
	q.Add(st.MakePod().Name("p").Obj())
	fail(t, q, "")
	if c := counts(q); c != [3]int{0, 1, 0} {
		t.Fatalf("counts = %v, want it backing off", c)
	}
	clk.Step(999 * time.Millisecond)
	q.flushBackoffCompleted()
	if c := counts(q); c != [3]int{0, 1, 0} {
		t.Fatalf("counts = %v before the backoff ended", c)
	}
	clk.Step(time.Millisecond)
	q.flushBackoffCompleted()
	if c := counts(q); c != [3]int{1, 0, 0} {
		t.Fatalf("counts = %v after the backoff", c)
	}
}

func TestUnschedulablePodMovesOnlyOnEventsItsPluginsCareAbout(t *testing.T) {
	q, clk := newQueue(t)
	q.Add(st.MakePod().Name("p").Obj())
	fail(t, q, names.NodeResourcesFit)
	if c := counts(q); c != [3]int{0, 0, 1} {
		t.Fatalf("counts = %v, want unschedulable", c)
	}
	q.MoveAllToActiveOrBackoffQueue(nodeLabel)
	if c := counts(q); c != [3]int{0, 0, 1} {
		t.Fatalf("a label change moved a pod rejected for resources: %v", c)
	}
	q.MoveAllToActiveOrBackoffQueue(assignedDelete)
	if c := counts(q); c != [3]int{0, 1, 0} {
		t.Fatalf("counts = %v, want backing off (the failure was just now)", c)
	}
	clk.Step(time.Second)
	q.flushBackoffCompleted()
	if c := counts(q); c != [3]int{1, 0, 0} {
		t.Fatalf("counts = %v, want active", c)
	}
}

func TestEventDuringTheAttemptIsNotLost(t *testing.T) {
	q, _ := newQueue(t)
	q.Add(st.MakePod().Name("p").Obj())
	p, err := q.Pop()
	if err != nil {
		t.Fatal(err)
	}
	cycle := q.SchedulingCycle()
	// A node arrives while the pod is being scheduled, after the snapshot
	// the attempt used.
	q.MoveAllToActiveOrBackoffQueue(nodeAdd)
	p.UnschedulablePlugins = sets.New(names.NodeResourcesFit)
	q.AddUnschedulableIfNotPresent(p, cycle)
	if c := counts(q); c != [3]int{0, 1, 0} {
		t.Fatalf("counts = %v, want backoff rather than unschedulable", c)
	}
}

func TestUnschedulablePodsAreRetriedAfterFiveMinutes(t *testing.T) {
	q, clk := newQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	q.Add(st.MakePod().Name("p").Obj())
	fail(t, q, names.NodeAffinity)
	waitTickers(t, clk)
	clk.Step(4*time.Minute + 59*time.Second)
	q.flushUnschedulableLeftover()
	if c := counts(q); c != [3]int{0, 0, 1} {
		t.Fatalf("counts = %v before 5 minutes", c)
	}
	// The next flush tick after the 5 minutes moves it.
	clk.Step(30 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for counts(q) != [3]int{1, 0, 0} {
		if time.Now().After(deadline) {
			t.Fatalf("counts = %v after 5 minutes", counts(q))
		}
		time.Sleep(time.Millisecond)
	}
	if c := counts(q); c != [3]int{1, 0, 0} {
		t.Fatalf("counts = %v", c)
	}
}

// waitTickers waits until Run has made its tickers, so a Step fires
// them.
func waitTickers(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run never waited on its tickers")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUpdatesOfUnschedulablePods(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *v1.Pod)
		moved  bool
	}{
		{"status only: stays", func(p *v1.Pod) { p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled}} }, false},
		{"labels: retried", func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} }, true},
		{"spec: retried", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newQueue(t)
			old := st.MakePod().Name("p").Obj()
			q.Add(old)
			fail(t, q, names.NodeAffinity)
			clk.Step(time.Minute)
			cur := old.DeepCopy()
			tt.change(cur)
			q.Update(old, cur)
			a, _, u := q.Counts()
			if (a == 1) != tt.moved || (u == 1) == tt.moved {
				t.Fatalf("counts = %v", counts(q))
			}
		})
	}
}

func TestPodDeletedDuringItsAttemptIsDropped(t *testing.T) {
	q, _ := newQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(pod)
	p, _ := q.Pop()
	q.Delete(pod)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
	if c := counts(q); c != [3]int{} {
		t.Fatalf("counts = %v, want empty", c)
	}
}

func TestPopWaitsForAPodAndStopsOnClose(t *testing.T) {
	q, _ := newQueue(t)
	got := make(chan string)
	go func() {
		p, err := q.Pop()
		if err != nil {
			got <- err.Error()
			return
		}
		got <- p.Pod.Name
	}()
	q.Add(st.MakePod().Name("p").Obj())
	if name := <-got; name != "p" {
		t.Fatalf("popped %q", name)
	}
	go func() {
		_, err := q.Pop()
		got <- err.Error()
	}()
	q.Close()
	if msg := <-got; msg != ErrClosed.Error() {
		t.Fatalf("Pop after Close: %s", msg)
	}
}

func TestNominatedPodsAreTrackedPerNode(t *testing.T) {
	q, _ := newQueue(t)
	if q.NominatedPodsForNode("n1") != nil {
		t.Fatal("nominations out of nothing")
	}
	pod := st.MakePod().Name("p").NominatedNode("n1").Obj()
	q.Add(pod)
	if got := q.NominatedPodsForNode("n1"); len(got) != 1 || got[0].Pod.Name != "p" {
		t.Fatalf("nominated = %v", got)
	}
	q.AddNominatedPod(framework.NewPodInfo(pod), "n2")
	if len(q.NominatedPodsForNode("n1")) != 0 || len(q.NominatedPodsForNode("n2")) != 1 {
		t.Fatal("renomination kept the old node")
	}
	q.Delete(pod)
	if len(q.NominatedPodsForNode("n2")) != 0 {
		t.Fatal("deleted pod still nominated")
	}
}
