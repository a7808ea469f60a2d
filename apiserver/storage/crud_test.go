package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func setData(k, v string) func(runtime.Object) (runtime.Object, error) {
	return func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		if c.Data == nil {
			c.Data = map[string]string{}
		}
		c.Data[k] = v
		return c, nil
	}
}

func TestCreateGetUpdateDeleteWithConflictsAndPreconditions(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	key := s.Key("ns", "a")
	if key != "/registry/configmaps/ns/a" || s.Key("", "x") != "/registry/configmaps/x" {
		t.Fatalf("keys %q %q", key, s.Key("", "x"))
	}

	created, err := s.Create(ctx, key, cm("ns", "a", nil, "k", "1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	rv1 := rvOf(t, created)
	if rv1 == "" || created.GetObjectKind().GroupVersionKind().Kind != "ConfigMap" {
		t.Fatalf("created object: rv %q kind %v", rv1, created.GetObjectKind())
	}
	if _, err := s.Create(ctx, key, cm("ns", "a", nil), 0); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	withRV := cm("ns", "b", nil)
	withRV.ResourceVersion = "5"
	if _, err := s.Create(ctx, s.Key("ns", "b"), withRV, 0); !apierrors.IsBadRequest(err) {
		t.Fatalf("create with a resourceVersion: %v", err)
	}
	if _, err := s.Create(ctx, "/registry/pods/ns/a", cm("ns", "a", nil), 0); err == nil {
		t.Fatal("created outside the store's prefix")
	}

	// rv1 first: "0" may be served by a cache that has not seen the create yet.
	for _, rv := range []string{"", rv1, "0"} {
		got, err := s.Get(ctx, key, GetOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("get rv=%q: %v", rv, err)
		}
		if rvOf(t, got) != rv1 || got.(*corev1.ConfigMap).Data["k"] != "1" {
			t.Fatalf("get rv=%q: %+v", rv, got)
		}
	}
	for _, rv := range []string{"", "0"} {
		if _, err := s.Get(ctx, s.Key("ns", "nope"), GetOptions{ResourceVersion: rv}); !apierrors.IsNotFound(err) {
			t.Fatalf("get missing rv=%q: %v", rv, err)
		}
	}

	stale := rv1
	updated, err := s.GuaranteedUpdate(ctx, key, &metav1.Preconditions{ResourceVersion: &stale}, setData("k", "2"), false)
	if err != nil {
		t.Fatal(err)
	}
	rv2 := rvOf(t, updated)
	if rv2 == rv1 {
		t.Fatal("update kept the resourceVersion")
	}

	otherUID := types.UID("someone-else")
	tests := []struct {
		name    string
		precond *metav1.Preconditions
		want    string
	}{
		{"stale resourceVersion", &metav1.Preconditions{ResourceVersion: &stale}, OptimisticLockErrorMsg},
		{"other uid", &metav1.Preconditions{UID: &otherUID}, "Precondition failed: UID in precondition"},
	}
	for _, tt := range tests {
		t.Run("update/"+tt.name, func(t *testing.T) {
			_, err := s.GuaranteedUpdate(ctx, key, tt.precond, setData("k", "x"), false)
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want 409 with %q", err, tt.want)
			}
		})
		t.Run("delete/"+tt.name, func(t *testing.T) {
			_, err := s.Delete(ctx, key, tt.precond, nil)
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed") {
				t.Fatalf("got %v, want 409 Precondition failed", err)
			}
		})
	}

	t.Run("an update that changes nothing writes nothing", func(t *testing.T) {
		same, err := s.GuaranteedUpdate(ctx, key, nil, setData("k", "2"), false)
		if err != nil || rvOf(t, same) != rv2 {
			t.Fatalf("no-op update: rv %v err %v, want %s", rvOf(t, same), err, rv2)
		}
		rev, _ := s.currentRevision(ctx)
		if strconv.FormatInt(rev, 10) != rv2 {
			t.Fatalf("store revision moved to %d on a no-op update", rev)
		}
	})
	t.Run("missing object", func(t *testing.T) {
		if _, err := s.GuaranteedUpdate(ctx, s.Key("ns", "new"), nil, setData("k", "v"), false); !apierrors.IsNotFound(err) {
			t.Fatalf("update of a missing object: %v", err)
		}
		created, err := s.GuaranteedUpdate(ctx, s.Key("ns", "new"), nil, func(cur runtime.Object) (runtime.Object, error) {
			if cur.(*corev1.ConfigMap).Name != "" {
				t.Errorf("update-as-create got %+v, want an empty object", cur)
			}
			return cm("ns", "new", nil), nil
		}, true)
		if err != nil || rvOf(t, created) == "" {
			t.Fatalf("update-as-create: %v", err)
		}
	})
	t.Run("tryUpdate error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := s.GuaranteedUpdate(ctx, key, nil, func(runtime.Object) (runtime.Object, error) { return nil, boom }, false); err != boom {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		refused := errors.New("refused")
		if _, err := s.Delete(ctx, key, nil, func(runtime.Object) error { return refused }); err != refused {
			t.Fatalf("validate error: %v", err)
		}
		uid := types.UID("uid-a")
		last, err := s.Delete(ctx, key, &metav1.Preconditions{UID: &uid, ResourceVersion: &rv2}, func(cur runtime.Object) error {
			if rvOf(t, cur) != rv2 {
				t.Errorf("validate saw rv %s", rvOf(t, cur))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := s.currentRevision(ctx)
		if last.(*corev1.ConfigMap).Data["k"] != "2" || rvOf(t, last) != strconv.FormatInt(rev, 10) {
			t.Fatalf("delete returned %+v, want the last state at the deletion's revision %d", last, rev)
		}
		if _, err := s.Get(ctx, key, GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: %v", err)
		}
		if _, err := s.Delete(ctx, key, nil, nil); !apierrors.IsNotFound(err) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestConcurrentUpdatesRetryAndLoseNothing(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	key := s.Key("ns", "counter")
	if _, err := s.Create(ctx, key, cm("ns", "counter", nil, "n", "0"), 0); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	var tries atomic.Int64
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
					c := cur.(*corev1.ConfigMap)
					n, _ := strconv.Atoi(c.Data["n"])
					c.Data["n"] = strconv.Itoa(n + 1)
					tries.Add(1)
					return c, nil
				}, false)
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.Get(ctx, key, GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.(*corev1.ConfigMap).Data["n"]; n != strconv.Itoa(writers*each) {
		t.Fatalf("counter %s after %d increments", n, writers*each)
	}
	t.Logf("%d increments took %d tries", writers*each, tries.Load())
}

func TestStoreReadsOutOfPrefixAreRefused(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := context.Background()
	for _, key := range []string{"/registry/configmaps", "/registry/configmaps/", "/registry/secrets/ns/a"} {
		if _, err := s.Get(ctx, key, GetOptions{}); err == nil {
			t.Errorf("get %q was served", key)
		}
	}
	if _, err := s.List(ctx, "/registry/secrets/", ListOptions{}); err == nil {
		t.Error("list of another prefix was served")
	}
}

// Updates start from the watch cache's copy; one that is stale (another
// API server just wrote) must neither lose the write nor refuse a client
// that holds the newer resourceVersion.
func TestUpdateFromAStaleCacheCopy(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	a := newConfigMapStore(t, c.local(0), StoreOptions{})
	b := newConfigMapStore(t, c.local(0), StoreOptions{})
	key := a.Key("ns", "stale")
	if _, err := a.Create(ctx, key, cm("ns", "stale", nil, "v", "0"), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := b.Get(ctx, key, GetOptions{ResourceVersion: "0"}); return err == nil })
	for i := 1; i <= 20; i++ {
		// A writes; B updates at once with A's new resourceVersion, before
		// B's cache may have seen A's write.
		out, err := a.GuaranteedUpdate(ctx, key, nil, setData("v", fmt.Sprint(i)), false)
		if err != nil {
			t.Fatal(err)
		}
		rv := rvOf(t, out)
		if _, err := b.GuaranteedUpdate(ctx, key, &metav1.Preconditions{ResourceVersion: &rv}, setData("w", fmt.Sprint(i)), false); err != nil {
			t.Fatalf("update %d with the newest resourceVersion refused: %v", i, err)
		}
	}
	got, err := a.Get(ctx, key, GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := got.(*corev1.ConfigMap).Data; d["v"] != "20" || d["w"] != "20" {
		t.Fatalf("a write was lost: %v", d)
	}
}

// TestObjectsAndChanges: Objects hands the cache's objects, and Changes
// moves with every change of them (and only then), which is how callers
// deriving state from a cache, like the RBAC authorizer, know to derive
// it again.
func TestObjectsAndChanges(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	n0, ok := s.Changes()
	if !ok {
		t.Fatal("a ready cache is not ok")
	}
	if _, err := s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { n, _ := s.Changes(); return n != n0 })
	objs, n1, ok := s.Objects()
	if !ok || len(objs) != 1 || objs[0].(*corev1.ConfigMap).Name != "a" {
		t.Fatalf("objects after a create: %v (ok %v)", objs, ok)
	}
	if n, _ := s.Changes(); n != n1 {
		t.Errorf("changes moved from %d to %d with nothing written", n1, n)
	}
	if _, err := s.Delete(ctx, s.Key("ns", "a"), nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { n, _ := s.Changes(); return n != n1 })
	if objs, _, _ := s.Objects(); len(objs) != 0 {
		t.Errorf("objects after the delete: %v", objs)
	}
}
