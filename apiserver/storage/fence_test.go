package storage

import (
	"testing"

	"cairn/internal/fence"
	"cairn/raftstore"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestLeaderFenceKeyIsUnderThePrefix(t *testing.T) {
	if raftstore.LeaderFenceKey != FenceKeyPrefix+"leader" {
		t.Fatalf("raftstore's fence key %q is not %q", raftstore.LeaderFenceKey, FenceKeyPrefix+"leader")
	}
}

// TestFencedWritesAreRefusedOnceTheTokenMoves checks create, update and
// delete under a fence: they apply while the store holds the token and
// are refused, leaving the object as it was, once it holds another.
func TestFencedWritesAreRefusedOnceTheTokenMoves(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	fenceKey := FenceKeyPrefix + "test"
	if _, err := b.KV.Put(ctx, fenceKey, "1"); err != nil {
		t.Fatal(err)
	}
	old := WithFence(ctx, Fence{Key: fenceKey, Token: "1"})
	if _, err := s.Create(old, s.Key("ns", "a"), cm("ns", "a", nil, "k", "1"), 0); err != nil {
		t.Fatalf("create under the current token: %v", err)
	}
	if _, err := s.GuaranteedUpdate(old, s.Key("ns", "a"), nil, setData("k", "2"), false); err != nil {
		t.Fatalf("update under the current token: %v", err)
	}

	if _, err := b.KV.Put(ctx, fenceKey, "2"); err != nil { // a new leader
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !fence.IsRefused(err) || !apierrors.IsConflict(err) {
			t.Fatalf("%s under the old token: %v, want a fenced 409", what, err)
		}
	}
	_, err := s.Create(old, s.Key("ns", "b"), cm("ns", "b", nil), 0)
	refused("create", err)
	_, err = s.GuaranteedUpdate(old, s.Key("ns", "a"), nil, setData("k", "3"), false)
	refused("update", err)
	_, err = s.Delete(old, s.Key("ns", "a"), nil, nil)
	refused("delete", err)
	got, err := s.Get(ctx, s.Key("ns", "a"), GetOptions{})
	if err != nil || got.(*corev1.ConfigMap).Data["k"] != "2" {
		t.Fatalf("object after refused writes: %v %v", got, err)
	}
	if _, err := s.Get(ctx, s.Key("ns", "b"), GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("refused create left an object: %v", err)
	}

	current := WithFence(ctx, Fence{Key: fenceKey, Token: "2"})
	if _, err := s.GuaranteedUpdate(current, s.Key("ns", "a"), nil, setData("k", "3"), false); err != nil {
		t.Fatalf("update under the new token: %v", err)
	}
	// A conflict that is not the fence's stays an ordinary one.
	if _, err := s.Create(current, s.Key("ns", "a"), cm("ns", "a", nil), 0); !apierrors.IsAlreadyExists(err) || fence.IsRefused(err) {
		t.Fatalf("second create under the current token: %v, want AlreadyExists", err)
	}
	if _, err := s.Delete(current, s.Key("ns", "a"), nil, nil); err != nil {
		t.Fatalf("delete under the new token: %v", err)
	}
	missing := WithFence(ctx, Fence{Key: FenceKeyPrefix + "none", Token: "1"})
	_, err = s.Create(missing, s.Key("ns", "c"), cm("ns", "c", nil), 0)
	refused("create under a fence that does not exist", err)
}

// TestFenceOfStoresTheTokenWithTheObject checks the side write used for
// Leases: the token is written with the object and removed with it.
func TestFenceOfStoresTheTokenWithTheObject(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	fenceKey := FenceKeyPrefix + "cm/ns/a"
	s := newConfigMapStore(t, b, StoreOptions{FenceOf: func(obj runtime.Object) (string, string, bool) {
		v, ok := obj.(*corev1.ConfigMap).Data["holder"]
		return fenceKey, v, ok
	}})
	ctx := ctxT(t)
	token := func() string {
		resp, err := b.KV.Get(ctx, fenceKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}
	if _, err := s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil, "holder", "x"), 0); err != nil {
		t.Fatal(err)
	}
	if got := token(); got != "x" {
		t.Fatalf("token after create %q, want x", got)
	}
	if _, err := s.GuaranteedUpdate(ctx, s.Key("ns", "a"), nil, setData("holder", "y"), false); err != nil {
		t.Fatal(err)
	}
	if got := token(); got != "y" {
		t.Fatalf("token after update %q, want y", got)
	}
	if _, err := s.Delete(ctx, s.Key("ns", "a"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := token(); got != "<none>" {
		t.Fatalf("token after delete %q, want none", got)
	}
}

func TestLeaderChangesAreUnavailability(t *testing.T) {
	for _, tc := range []struct {
		err        error
		retryAfter int32
	}{
		{rpctypes.ErrNoLeader, 1},
		{rpctypes.ErrLeaderChanged, 0},
		{rpctypes.ErrTimeoutDueToLeaderFail, 0},
	} {
		se, ok := storeError(tc.err).(*apierrors.StatusError)
		if !ok || se.ErrStatus.Code != 503 {
			t.Fatalf("storeError(%v) = %v, want a 503", tc.err, se)
		}
		got := int32(0)
		if se.ErrStatus.Details != nil {
			got = se.ErrStatus.Details.RetryAfterSeconds
		}
		if got != tc.retryAfter {
			t.Errorf("storeError(%v): Retry-After %d, want %d", tc.err, got, tc.retryAfter)
		}
	}
}
