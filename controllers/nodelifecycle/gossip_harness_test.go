package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"
	"cairn/internal/testport"
	"cairn/node/gossip"

	corev1 "k8s.io/api/core/v1"
)

// TestTimeFromAKilledAgentToNotReady measures, without asserting a bound,
// how long a node whose agent dies at once (no graceful leave, no more
// heartbeats) takes to be NotReady, with five agents' gossip, a real API
// and this controller; the grace period is long enough that only the
// gossip reports can explain the figure. The target is 3s.
func TestTimeFromAKilledAgentToNotReady(t *testing.T) {
	const n = 5
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ctx := context.Background()
	opts := controllers.DefaultOptions()
	opts.NodeMonitorGracePeriod = time.Minute
	addrs, err := testport.Free(n)
	if err != nil {
		t.Fatal(err)
	}
	kubelets := make([]*kubelet, n)
	members := make([]*gossip.Gossip, n)
	for i := range n {
		name := fmt.Sprintf("g%d", i+1)
		kubelets[i] = startKubelet(ctx, t, client, name)
		g, err := gossip.New(gossip.Config{NodeName: name, BindAddr: addrs[i], Join: slices.Delete(slices.Clone(addrs), i, i+1),
			Client: c.Client(0), Logger: testcluster.Logger().With("agent", name)})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = g.Run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		members[i] = g
	}
	clustertest.RunManager(t, c, controllers.Manager{Options: opts, Descriptors: []controllers.Descriptor{
		Descriptor(Config{}), // Kubernetes' monitor period: the reports must not need it
	}})
	clustertest.Eventually(t, 10*time.Second, "every member sees all five", func() (bool, error) {
		for _, g := range members {
			if len(g.Members()) != n {
				return false, nil
			}
		}
		return true, nil
	})
	time.Sleep(time.Second) // the controller's first pass records the heartbeats

	victim := n - 1
	killed := time.Now()
	members[victim].Close()
	kubelets[victim].halt()
	clustertest.Eventually(t, 15*time.Second, "the killed agent's node goes NotReady", func() (bool, error) {
		st, err := readyStatus(ctx, client, fmt.Sprintf("g%d", victim+1))
		return st == corev1.ConditionUnknown || st == corev1.ConditionFalse, err
	})
	t.Logf("killed agent's node NotReady after %v (target 3s)", time.Since(killed).Round(10*time.Millisecond))
}
