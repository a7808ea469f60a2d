package apiserver

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// Leader election timings, short so that a takeover happens in seconds;
// client-go requires lease > renew deadline > retry period * 1.2.
const (
	electLease = 2 * time.Second
	electRenew = time.Second
	electRetry = 200 * time.Millisecond
)

// TestLeaderElectionOverLeases runs client-go's leader election, as the
// scheduler and controllers run outside a server, with candidates on
// different API servers of one cluster.
func TestLeaderElectionOverLeases(t *testing.T) {
	c := newTestCluster(t, 3)
	waitNamespace(t, c.client(0), "kube-system")

	t.Run("ReleasedLeaseIsTakenOverAtOnce", func(t *testing.T) {
		log := &leaderLog{}
		a := startCandidate(t, c.client(0), "release", "a", true, log)
		a.waitLeading(t)
		b := startCandidate(t, c.client(1), "release", "b", true, log)
		time.Sleep(2 * electRetry)
		if b.isLeading() {
			t.Fatal("b leads while a holds the lease")
		}
		start := time.Now()
		a.stop()
		b.waitLeading(t)
		// A released lease is free: no need to wait for it to expire.
		if d := time.Since(start); d >= electLease {
			t.Errorf("b took over %v after a released the lease, want less than the lease duration %v", d, electLease)
		}
		log.checkOneLeaderAtATime(t)
		lease, err := c.client(2).CoordinationV1().Leases("kube-system").Get(ctxT(t), "release", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != "b" {
			t.Errorf("lease holder %q, want b", got)
		}
		if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 1 {
			t.Errorf("lease transitions %d, want 1", got)
		}
	})

	t.Run("LeaderWhoseAPIServerDiesIsReplaced", func(t *testing.T) {
		log := &leaderLog{}
		a := startCandidate(t, c.client(0), "crash", "a", false, log)
		a.waitLeading(t)
		b := startCandidate(t, c.client(1), "crash", "b", false, log)
		// a can no longer renew: it must step down before its lease
		// expires, and b take over once it has.
		c.cancels[0]()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.apis[0].Shutdown(sctx)
		b.waitLeading(t)
		select {
		case <-a.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a still runs as leader without reaching its API server")
		}
		log.checkOneLeaderAtATime(t)
	})
}

// TestLeasesBehaveAsCoordinationV1 checks what leader election and node
// heartbeats rely on: compare-and-swap updates, create on update, and
// validation.
func TestLeasesBehaveAsCoordinationV1(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	leases := c.client(0).CoordinationV1().Leases("default")
	other := c.client(1).CoordinationV1().Leases("default")
	waitNamespace(t, c.client(0), "default")

	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lock"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](10), AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ConcurrentUpdatesFromOneVersionOneWins", func(t *testing.T) {
		// Two candidates read the same version and both try to take the
		// lease, through different API servers.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, cl := range []interface {
			Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
		}{leases, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := l.DeepCopy()
				mine.Spec.HolderIdentity = ptr.To([]string{"b", "c"}[i])
				_, errs[i] = cl.Update(ctx, mine, metav1.UpdateOptions{})
			}()
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case apierrors.IsConflict(err):
				conflicts++
			default:
				t.Errorf("update: %v", err)
			}
		}
		if ok != 1 || conflicts != 1 {
			t.Fatalf("two updates from one resourceVersion: %d succeeded, %d conflicted (%v), want one of each", ok, conflicts, errs)
		}
	})

	t.Run("UpdateWithoutResourceVersionIsUnconditional", func(t *testing.T) {
		blind := l.DeepCopy()
		blind.ResourceVersion = ""
		blind.Spec.HolderIdentity = ptr.To("d")
		got, err := other.Update(ctx, blind, metav1.UpdateOptions{})
		if err != nil || ptr.Deref(got.Spec.HolderIdentity, "") != "d" {
			t.Fatalf("update without resourceVersion: %v %v", got, err)
		}
	})

	t.Run("UpdateOfMissingLeaseCreatesIt", func(t *testing.T) {
		got, err := leases.Update(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40)},
		}, metav1.UpdateOptions{})
		if err != nil || got.UID == "" {
			t.Fatalf("update of a missing lease: %v %v, want it created", got, err)
		}
	})

	t.Run("InvalidSpecIs422", func(t *testing.T) {
		tests := []struct {
			name string
			spec coordinationv1.LeaseSpec
		}{
			{"ZeroDuration", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}},
			{"NegativeTransitions", coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tt.spec}, metav1.CreateOptions{})
				if !apierrors.IsInvalid(err) {
					t.Fatalf("create: %v, want 422", err)
				}
			})
		}
	})

	t.Run("RenewIsSeenOnEveryAPIServer", func(t *testing.T) {
		cur, err := leases.Get(ctx, "lock", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Stored with microsecond precision, as Kubernetes does.
		renewed := metav1.NewMicroTime(time.Now().Add(time.Second).Truncate(time.Microsecond))
		cur.Spec.RenewTime = &renewed
		if cur, err = leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range c.apis {
			got, err := c.client(i).CoordinationV1().Leases("default").Get(ctx, "lock", metav1.GetOptions{})
			if err != nil || got.ResourceVersion != cur.ResourceVersion || !got.Spec.RenewTime.Equal(&renewed) {
				t.Errorf("API server %d: %v %v, want the renewed lease", i, got, err)
			}
		}
	})
}

// candidate is one client-go leader elector.
type candidate struct {
	id      string
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run has returned
	mu      sync.Mutex
	leading bool
	started chan struct{} // closed when it starts leading
}

// leaderLog records when each candidate led, to check that two never
// believed they led at the same time.
type leaderLog struct {
	mu    sync.Mutex
	spans []leaderSpan
}

type leaderSpan struct {
	id         string
	start, end time.Time // end is zero while it leads
}

func (l *leaderLog) started(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans = append(l.spans, leaderSpan{id: id, start: time.Now()})
}

func (l *leaderLog) stopped(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.spans {
		if l.spans[i].id == id && l.spans[i].end.IsZero() {
			l.spans[i].end = time.Now()
		}
	}
}

func (l *leaderLog) checkOneLeaderAtATime(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, a := range l.spans {
		for _, b := range l.spans[i+1:] {
			aEnd, bEnd := a.end, b.end
			if aEnd.IsZero() {
				aEnd = time.Now()
			}
			if bEnd.IsZero() {
				bEnd = time.Now()
			}
			if a.start.Before(bEnd) && b.start.Before(aEnd) {
				t.Errorf("%s and %s both led at once: %+v", a.id, b.id, l.spans)
			}
		}
	}
}

// startCandidate runs a leader elector for lease kube-system/name as id;
// release gives the lease up when the candidate stops.
func startCandidate(t *testing.T, cs kubernetes.Interface, name, id string, release bool, log *leaderLog) *candidate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{id: id, cancel: cancel, done: make(chan struct{}), started: make(chan struct{})}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: name},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   electLease,
		RenewDeadline:   electRenew,
		RetryPeriod:     electRetry,
		ReleaseOnCancel: release,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			// Leadership lasts as long as the context handed to the
			// leader's work: client-go cancels it before it releases the
			// lease or once it could not renew in time.
			OnStartedLeading: func(ctx context.Context) {
				log.started(id)
				c.setLeading(true)
				close(c.started)
				<-ctx.Done()
				c.setLeading(false)
				log.stopped(id)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *candidate) setLeading(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leading = v
}

func (c *candidate) isLeading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

func (c *candidate) waitLeading(t *testing.T) {
	t.Helper()
	select {
	case <-c.started:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not become leader within 10s", c.id)
	}
}

// stop ends the candidate and waits until it has stepped down.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}
