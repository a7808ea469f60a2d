// Package clustertest runs the cluster controllers in tests: against a
// real in-process control plane, or against client-go's fake clientset
// for table tests of one sync.
package clustertest

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/internal/testcluster"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

// RunManager runs m against API server 0 of c until the test ends. It
// returns once the manager's informers have had time to start.
func RunManager(t testing.TB, c *testcluster.Cluster, m controllers.Manager) {
	t.Helper()
	if m.Logger == nil {
		m.Logger = testcluster.Logger()
	}
	// The configuration is built here, not in the goroutine: building one
	// writes a kubeconfig file, which the test may be doing at the same
	// time for its own clients.
	cfg := c.AdminConfig(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("clustertest: manager: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("clustertest: the manager did not stop within 10s")
		}
	})
}

// Eventually calls cond every 50ms until it reports true, and fails the
// test with what if it has not within timeout. The last error cond
// returned is reported with it.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FakeContext returns a controller context over a fake clientset holding
// objs. Its informers are started with Start once the controller was
// built.
func FakeContext(t testing.TB, opts controllers.Options, clk clock.WithTicker, objs ...runtime.Object) (*controllers.Context, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	cc := controllers.NewContext(nil, client, opts, testcluster.Logger(), clk)
	t.Cleanup(cc.Shutdown)
	return cc, client
}

// Start starts cc's informers and waits for their caches, stopping them
// when the test ends.
func Start(t testing.TB, cc *controllers.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cc.Informers.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		cc.Informers.Shutdown()
	})
	for typ, ok := range cc.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("clustertest: the %v informer did not sync", typ)
		}
	}
}
