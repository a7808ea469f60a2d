package leader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/internal/fence"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// term is one leadership as a probe loop saw it start.
type term struct {
	identity string
	cfg      *rest.Config // the loop's fenced client configuration
	stopped  chan struct{}
}

// probeLoop reports each start of the leader loops on terms.
func probeLoop(identity string, terms chan<- term) Loop {
	return Loop{Name: "probe", Run: func(ctx context.Context, cfg *rest.Config) error {
		tm := term{identity: identity, cfg: cfg, stopped: make(chan struct{})}
		terms <- tm
		<-ctx.Done()
		close(tm.stopped)
		return nil
	}}
}

func nextTerm(t *testing.T, terms <-chan term) term {
	t.Helper()
	select {
	case tm := <-terms:
		return tm
	case <-time.After(20 * time.Second):
		t.Fatal("no leader loops started within 20s")
		return term{}
	}
}

func writeConfigMap(cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// withServer points a fenced configuration at another API server, as a
// deposed leader whose requests still reach a live replica.
func withServer(cfg *rest.Config, host string) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Host = host
	return out
}

func TestRaftColocatedLeadershipIsFencedAcrossFailover(t *testing.T) {
	c := testcluster.New(t, 3)
	terms := make(chan term, 16)
	type started struct {
		epoch uint64
		at    time.Time
	}
	epochs := make(chan started, 16)
	for i := 0; i < c.Size(); i++ {
		id := fmt.Sprintf("s%d", i+1)
		r := &RaftColocated{
			Store: c.Store(i), Identity: id, Config: c.AdminConfig(i), Logger: testcluster.Logger(),
			LeaseDuration: 3 * time.Second, Loops: []Loop{probeLoop(id, terms)},
			OnStarted: func(epoch uint64, _ time.Duration) { epochs <- started{epoch, time.Now()} },
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go r.Run(ctx)
	}
	ctx := context.Background()

	first := nextTerm(t, terms)
	firstEpoch := (<-epochs).epoch
	lead := c.Leader()
	if want := fmt.Sprintf("s%d", lead+1); first.identity != want {
		t.Fatalf("loops started on %s; the store leader is %s", first.identity, want)
	}
	lease, err := c.Client(lead).CoordinationV1().Leases(LeaseNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != first.identity {
		t.Fatalf("leader Lease %v, %v; want holder %s", lease, err, first.identity)
	}
	if err := writeConfigMap(first.cfg, "by-first"); err != nil {
		t.Fatalf("the current leader's fenced write: %v", err)
	}

	killed := time.Now()
	c.Kill(lead)
	second := nextTerm(t, terms)
	next := <-epochs
	secondEpoch := next.epoch
	// Reported, not asserted: absolute times on a shared machine are noisy.
	t.Logf("failover: leader loops running on %s %v after killing %s began (epoch %d -> %d)",
		second.identity, next.at.Sub(killed).Round(time.Millisecond), first.identity, firstEpoch, secondEpoch)
	if second.identity == first.identity || secondEpoch <= firstEpoch {
		t.Fatalf("second term %s epoch %d after %s epoch %d", second.identity, secondEpoch, first.identity, firstEpoch)
	}
	select {
	case <-first.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed leader's loops did not stop")
	}
	survivor := c.Leader()
	deposed := withServer(first.cfg, c.URL(survivor))
	if err := writeConfigMap(deposed, "by-deposed"); !IsFenced(err) {
		t.Fatalf("a write under the old epoch: %v, want it refused as fenced", err)
	}
	if err := writeConfigMap(second.cfg, "by-second"); err != nil {
		t.Fatalf("the new leader's fenced write: %v", err)
	}
	lease, err = c.Client(survivor).CoordinationV1().Leases(LeaseNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != second.identity || *lease.Spec.LeaseTransitions != 1 {
		t.Fatalf("leader Lease after failover: %+v, %v", lease.Spec, err)
	}
}

func TestLeaseElectorFencesThePreviousHolder(t *testing.T) {
	c := testcluster.New(t, 3)
	terms := make(chan term, 16)
	start := func(i int, id string) context.CancelFunc {
		e := &LeaseElector{
			Config: c.AdminConfig(i), Namespace: "kube-system", Name: "test-component", Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			Loops: []Loop{probeLoop(id, terms)}, Logger: testcluster.Logger(),
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stopA := start(0, "a")
	first := nextTerm(t, terms)
	if first.identity != "a" {
		t.Fatalf("first term held by %s", first.identity)
	}
	start(1, "b")
	if err := writeConfigMap(first.cfg, "by-a"); err != nil {
		t.Fatalf("the holder's fenced write: %v", err)
	}
	select {
	case tm := <-terms:
		t.Fatalf("%s started its loops while a holds the Lease", tm.identity)
	case <-time.After(time.Second):
	}

	stopA() // releases the Lease
	second := nextTerm(t, terms)
	if second.identity != "b" {
		t.Fatalf("second term held by %s", second.identity)
	}
	if err := writeConfigMap(first.cfg, "by-a-again"); !IsFenced(err) {
		t.Fatalf("the previous holder's write: %v, want it refused as fenced", err)
	}
	if err := writeConfigMap(second.cfg, "by-b"); err != nil {
		t.Fatalf("the new holder's fenced write: %v", err)
	}
	// A malformed fence is a client error, not a silent unfenced write.
	bad := Fenced(c.AdminConfig(2), fence.Fence{Name: "leader", Token: "not-a-number"})
	if err := writeConfigMap(bad, "by-bad"); err == nil {
		t.Fatal("a write with a malformed fence header was accepted")
	}
}
