package storage

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestObjectsWithATTLExpire(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	w, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{})
	defer w.Stop()

	rv := mustRV(t)(s.Create(ctx, s.Key("ns", "short"), cm("ns", "short", nil), 1))
	// An update keeps the lease.
	rv2 := mustRV(t)(s.GuaranteedUpdate(ctx, s.Key("ns", "short"), nil, setData("k", "v"), false))
	mustRV(t)(s.Create(ctx, s.Key("ns", "long"), cm("ns", "long", nil), 0))
	expectEvents(t, w, "ADDED short@"+rv, "MODIFIED short@"+rv2+" k=v")
	next(t, w) // long
	start := time.Now()
	ev := next(t, w)
	if d := describe(ev); d[:13] != "DELETED short" {
		t.Fatalf("got %s, want the short-lived object deleted", d)
	}
	t.Logf("expired after %v", time.Since(start))
	if _, err := s.Get(ctx, s.Key("ns", "short"), GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("expired object: %v", err)
	}
	if _, err := s.Get(ctx, s.Key("ns", "long"), GetOptions{}); err != nil {
		t.Fatalf("object without a TTL: %v", err)
	}
}

func TestObjectsCreatedTogetherShareALease(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	for _, name := range []string{"a", "b", "c"} {
		mustRV(t)(s.Create(ctx, s.Key("ns", name), cm("ns", name, nil), 3600))
	}
	leases, err := b.Lease.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 1 {
		t.Fatalf("%d leases for three objects created together", len(leases.Leases))
	}
	ttl, err := b.Lease.TimeToLive(ctx, leases.Leases[0].ID)
	if err != nil || ttl.GrantedTTL < 3600 || ttl.GrantedTTL > 3660 {
		t.Fatalf("lease granted for %ds (%v), want 3600..3660", ttl.GrantedTTL, err)
	}
	// A store without a lease client refuses TTLs rather than ignore them.
	noLease := b
	noLease.Lease = nil
	s2 := newConfigMapStore(t, noLease, StoreOptions{})
	if _, err := s2.Create(ctx, s2.Key("ns", "d"), cm("ns", "d", nil), 10); err == nil {
		t.Fatal("created an object with a TTL without a lease client")
	}
}
