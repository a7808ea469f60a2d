package deployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/deployment"
	"cairn/controllers/internal/workloadtest"
	"cairn/controllers/replicaset"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"
	"cairn/leader"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestRolloutFinishesOnTheNewLeaderAfterTheLeaderDies(t *testing.T) {
	c := testcluster.New(t, 3)
	started := make(chan string, 8)
	for i := 0; i < c.Size(); i++ {
		id := fmt.Sprintf("s%d", i+1)
		m := &controllers.Manager{
			Descriptors: []controllers.Descriptor{replicaset.Descriptor(), deployment.Descriptor()},
			Logger:      testcluster.Logger().With("replica", id),
		}
		r := &leader.RaftColocated{
			Store: c.Store(i), Identity: id, Config: c.AdminConfig(i), Logger: testcluster.Logger(),
			LeaseDuration: 3 * time.Second, Loops: []leader.Loop{{Name: "controllers", Run: m.Run}},
			OnStarted: func(uint64, time.Duration) { started <- id },
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	first := <-started
	lead := c.Leader()
	if want := fmt.Sprintf("s%d", lead+1); first != want {
		t.Fatalf("controllers started on %s, the store leader is %s", first, want)
	}
	// The test's own clients talk to a replica that survives.
	survivor := (lead + 1) % c.Size()
	client := c.Client(survivor)
	ns := workloadtest.Namespace(t, client, "failover")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 400 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	pods := watchPods(t, client, ns)

	const replicas, surge = 6, 2
	d := webDeployment(ns, replicas, "img:a")
	d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(surge))
	if _, err := client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns, "web", 30*time.Second)

	pods.arm()
	setImage(t, client, ns, "web", "img:b")
	workloadtest.Eventually(t, 20*time.Second, "the rollout under way", func() (bool, string) {
		got := pods.images()
		return got["img:b"] >= 2 && got["img:a"] >= 2, fmt.Sprint(got)
	})
	killed := time.Now()
	c.Kill(lead)
	var second string
	select {
	case second = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("no new leader started the controllers within 20s")
	}
	t.Logf("controllers moved from %s to %s %v after the kill; pods then: %v", first, second,
		time.Since(killed).Round(time.Millisecond), pods.images())

	waitRolledOut(t, client, ns, "web", 60*time.Second)
	workloadtest.Eventually(t, 10*time.Second, "exactly the new pods", func() (bool, string) {
		got := pods.images()
		return got["img:b"] == replicas && len(got) == 1, fmt.Sprint(got)
	})
	// Nothing more comes: no late duplicate from either leader.
	time.Sleep(time.Second)
	if got := pods.images(); got["img:b"] != replicas || len(got) != 1 {
		t.Fatalf("pods settled at %v, want exactly %d of img:b", got, replicas)
	}
	minAvail, maxActive, maxSets := pods.extremes()
	t.Logf("rollout across failover: at least %d pods available, at most %d running, at most %d in the sets", minAvail, maxActive, maxSets)
	if maxSets > replicas+surge {
		t.Fatalf("the sets were sized for %d pods at once; maxSurge %d allows %d", maxSets, surge, replicas+surge)
	}
}
