package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/internal/fence"
	"cairn/internal/testcluster"
	"cairn/leader"
	"cairn/scheduler"
	st "cairn/scheduler/internal/schedtest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestSchedulingGoesOnAfterTheLeaderIsKilled runs the scheduler as the
// leader loop of every replica, kills the leading replica while pods are
// being created, and checks that the new leader's scheduler binds the
// rest, that no pod is bound twice, and that a write under the old epoch
// is refused.
func TestSchedulingGoesOnAfterTheLeaderIsKilled(t *testing.T) {
	c := testcluster.New(t, 3)
	cs := c.Client(0)
	for i := 0; i < 3; i++ {
		createNode(t, cs, st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(st.Res{"cpu": "100", "memory": "100Gi"}).Obj())
	}
	epochs := make(chan uint64, 8)
	for i := 0; i < c.Size(); i++ {
		r := &leader.RaftColocated{
			Store: c.Store(i), Identity: fmt.Sprintf("s%d", i+1), Config: c.AdminConfig(i), Logger: testcluster.Logger(),
			Loops: []leader.Loop{{Name: "scheduler", Run: func(ctx context.Context, cfg *rest.Config) error {
				client, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					return err
				}
				s, err := scheduler.New(scheduler.Config{Client: client, Logger: testcluster.Logger(), Identity: "failover"})
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}}},
			OnStarted: func(epoch uint64, _ time.Duration) { epochs <- epoch },
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go r.Run(ctx)
	}
	first := <-epochs
	lead := c.Leader()
	survivor := (lead + 1) % c.Size()
	client := c.Client(survivor)

	create := func(from, to int) {
		for i := from; i < to; i++ {
			createPod(t, client, st.MakePod().Name(fmt.Sprintf("p%03d", i)).Req(st.Res{"cpu": "100m"}).Obj())
		}
	}
	create(0, 20)
	c.Kill(lead)
	create(20, 40)
	select {
	case second := <-epochs:
		if second <= first {
			t.Fatalf("new leader's epoch %d, first %d", second, first)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no new leader started the scheduler")
	}
	for i := 0; i < 40; i++ {
		waitBound(t, client, fmt.Sprintf("p%03d", i))
	}

	// Every Scheduled event names a pod once: no pod was bound twice.
	// (The killed leader's last events may be lost with its API server.)
	// Events are recorded after the bindings, asynchronously: wait for
	// the new leader's.
	var seen map[string]bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", "Scheduled").String()})
		if err != nil {
			t.Fatal(err)
		}
		seen = map[string]bool{}
		for _, e := range evs.Items {
			if e.Reason != "Scheduled" {
				continue
			}
			if seen[e.InvolvedObject.Name] || e.Count > 1 {
				t.Fatalf("pod %s was scheduled more than once: %s (count %d)", e.InvolvedObject.Name, e.Message, e.Count)
			}
			seen[e.InvolvedObject.Name] = true
		}
		if len(seen) >= 20 || time.Now().After(deadline) {
			break
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d pods have a Scheduled event; the new leader scheduled at least 20", len(seen))
	}

	// A deposed leader's write is refused.
	old := leader.Fenced(c.AdminConfig(survivor), fence.Leader(first))
	oldClient, err := kubernetes.NewForConfig(old)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), "p000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels = map[string]string{"written-by": "deposed-leader"}
	if _, err := oldClient.CoreV1().Pods(ns).Update(context.Background(), pod, metav1.UpdateOptions{}); !fence.IsRefused(err) {
		t.Fatalf("a write under the old epoch: %v, want it refused", err)
	}
}
