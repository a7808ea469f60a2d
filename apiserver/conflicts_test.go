package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestWritesFromStaleStateConflict checks the 409s that optimistic
// concurrency rests on, for every way a client can carry a precondition.
func TestWritesFromStaleStateConflict(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	waitNamespace(t, c.client(0), "default")
	cms := c.unthrottledClient(t, 0).CoreV1().ConfigMaps("default")
	old, err := cms.Create(ctx, numberedConfigMap("cas", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, numberedConfigMapAt(old, 1), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	staleRV := old.ResourceVersion

	tests := []struct {
		name  string
		write func() error
	}{
		{"UpdateWithStaleResourceVersion", func() error {
			_, err := cms.Update(ctx, numberedConfigMapAt(old, 2), metav1.UpdateOptions{})
			return err
		}},
		{"MergePatchWithStaleResourceVersion", func() error {
			_, err := cms.Patch(ctx, "cas", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"`+staleRV+`"},"data":{"n":"2"}}`), metav1.PatchOptions{})
			return err
		}},
		{"JSONPatchSettingStaleResourceVersion", func() error {
			_, err := cms.Patch(ctx, "cas", types.JSONPatchType, []byte(`[{"op":"replace","path":"/metadata/resourceVersion","value":"`+staleRV+`"},{"op":"replace","path":"/data/n","value":"2"}]`), metav1.PatchOptions{})
			return err
		}},
		{"DeleteWithStaleResourceVersion", func() error {
			return cms.Delete(ctx, "cas", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}})
		}},
		{"DeleteWithAnotherUID", func() error {
			return cms.Delete(ctx, "cas", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("another"))}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); !apierrors.IsConflict(err) {
				t.Fatalf("got %v, want 409 Conflict", err)
			}
			got, err := cms.Get(ctx, "cas", metav1.GetOptions{})
			if err != nil || numberOf(got) != 1 {
				t.Fatalf("after a refused write: %v %v, want number 1 kept", got, err)
			}
		})
	}

	t.Run("RacingUpdatesThroughEveryAPIServerOneWins", func(t *testing.T) {
		cur, err := cms.Get(ctx, "cas", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(c.apis))
		for i := range c.apis {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.client(i).CoreV1().ConfigMaps("default").Update(ctx, numberedConfigMapAt(cur, 10+i), metav1.UpdateOptions{})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !apierrors.IsConflict(err):
				t.Errorf("racing update: %v, want success or 409", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of %d racing updates from one resourceVersion succeeded, want 1: %v", won, len(errs), errs)
		}
	})
}

// TestCompactedHistoryIsGone compacts the store through its etcd API and
// checks that reads of the history it dropped answer 410 Gone, which
// tells clients to list again, while reads of current state still work.
func TestCompactedHistoryIsGone(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	waitNamespace(t, c.client(0), "default")
	c.waitCachesReady(t)
	cms := c.unthrottledClient(t, 0).CoreV1().ConfigMaps("default")
	v1, err := cms.Create(ctx, numberedConfigMap("hist", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 2; n <= 3; n++ {
		if _, err := cms.Update(ctx, numberedConfigMap("hist", n), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, numberedConfigMap("other", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	oldRV := v1.ResourceVersion
	exact := metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact}

	// History is readable until it is compacted.
	l, err := c.client(1).CoreV1().ConfigMaps("default").List(ctx, exact)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || numberOf(&l.Items[0]) != 1 {
		t.Fatalf("list at resourceVersion %s before compaction: %v, want hist with number 1", oldRV, l.Items)
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v %v, want a continue token", page, err)
	}
	// The next page must come from the store, not from a cache that is
	// still at the first page's revision.
	if _, err := cms.Update(ctx, numberedConfigMap("hist", 4), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	kv := clientv3.NewKVFromKVClient(c.stores[0].Local().KV, nil)
	resp, err := kv.Get(ctx, "compaction-point")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	fresh := c.startFreshAPI(t, 1)

	gone := []struct {
		name string
		read func(cs kubernetes.Interface) error
	}{
		{"ListExactAtCompactedResourceVersion", func(cs kubernetes.Interface) error {
			_, err := cs.CoreV1().ConfigMaps("default").List(ctx, exact)
			return err
		}},
		{"ListContinueFromCompactedRevision", func(cs kubernetes.Interface) error {
			_, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
			return err
		}},
	}
	for _, tt := range gone {
		t.Run(tt.name, func(t *testing.T) {
			// Compaction went through Raft: every replica's API server
			// agrees the history is gone.
			for i := range c.apis {
				if err := tt.read(c.client(i)); !isGone(err) {
					t.Errorf("API server %d: %v, want 410 Gone", i, err)
				}
			}
		})
	}

	t.Run("WatchFromCompactedResourceVersionOnFreshAPIServer", func(t *testing.T) {
		// A watch cache started after the compaction holds no event older
		// than it, as a restarted API server's would.
		w := watchUntilReady(t, fresh.CoreV1().ConfigMaps("default"), metav1.ListOptions{ResourceVersion: oldRV})
		defer w.Stop()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type != watch.Error {
				t.Fatalf("first event %v (open %v), want an ERROR", ev.Type, ok)
			}
			if err := apierrors.FromObject(ev.Object); !isGone(err) {
				t.Fatalf("watch error %v, want 410 Gone", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	})

	t.Run("WatchWithinCacheWindowIsServed", func(t *testing.T) {
		// As in Kubernetes, a watch cache that saw the events keeps
		// serving them after the store compacted them.
		w, err := c.client(2).CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV, FieldSelector: "metadata.name=hist"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for n := 2; n <= 4; n++ {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Modified || numberOf(ev.Object) != n {
					t.Fatalf("event %v number %d, want MODIFIED %d", ev.Type, numberOf(ev.Object), n)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no event %d", n)
			}
		}
	})

	t.Run("CurrentStateStillReads", func(t *testing.T) {
		for _, cs := range []kubernetes.Interface{c.client(0), fresh} {
			l, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: oldRV})
			if err != nil || len(l.Items) != 2 {
				t.Fatalf("list not older than %s: %v %v, want both configmaps", oldRV, l, err)
			}
			got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "hist", metav1.GetOptions{ResourceVersion: oldRV})
			if err != nil || numberOf(got) != 4 {
				t.Fatalf("get not older than %s: %v %v, want number 4", oldRV, got, err)
			}
		}
	})
}

// TestCreateRightAfterItsNamespace is what `kubectl apply -f` of a
// namespace and its objects does: a create that follows the creation of
// its namespace, on any API server, must find the namespace.
func TestCreateRightAfterItsNamespace(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	clients := []kubernetes.Interface{c.unthrottledClient(t, 0), c.unthrottledClient(t, 1), c.unthrottledClient(t, 2)}
	for i := range 30 {
		name := fmt.Sprintf("fresh-%d", i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := clients[i%3].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for j, cs := range []kubernetes.Interface{clients[i%3], clients[(i+1)%3]} {
			cm := numberedConfigMap(fmt.Sprintf("cm-%d", j), 0)
			if _, err := cs.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Errorf("create in namespace %s just created (same API server: %v): %v", name, j == 0, err)
			}
		}
	}
}

func numberedConfigMapAt(cur *corev1.ConfigMap, n int) *corev1.ConfigMap {
	cm := numberedConfigMap(cur.Name, n)
	cm.ResourceVersion = cur.ResourceVersion
	return cm
}

func isGone(err error) bool {
	st, ok := err.(apierrors.APIStatus)
	return ok && st.Status().Code == http.StatusGone
}

type configMapWatcher interface {
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// watchUntilReady opens a watch, retrying while a fresh API server's
// caches are still filling (429).
func watchUntilReady(t *testing.T, cms configMapWatcher, opts metav1.ListOptions) watch.Interface {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w, err := cms.Watch(context.Background(), opts)
		if err == nil {
			return w
		}
		if !apierrors.IsTooManyRequests(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
