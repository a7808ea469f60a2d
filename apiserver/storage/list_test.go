package storage

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func evenLabel(obj runtime.Object) bool { return obj.(*corev1.ConfigMap).Labels["parity"] == "even" }

// createMany creates n configmaps cm-000.. in ns, labelled by parity, and
// returns the revision after the last.
func createMany(t *testing.T, s *Store, ns string, n int) int64 {
	t.Helper()
	ctx := ctxT(t)
	var rev int64
	for i := 0; i < n; i++ {
		parity := map[string]string{"parity": []string{"even", "odd"}[i%2]}
		out, err := s.Create(ctx, s.Key(ns, fmt.Sprintf("cm-%03d", i)), cm(ns, fmt.Sprintf("cm-%03d", i), parity), 0)
		if err != nil {
			t.Fatal(err)
		}
		rev, _ = strconv.ParseInt(rvOf(t, out), 10, 64)
	}
	return rev
}

func TestListPaginatesWithLimitAndContinue(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	createMany(t, s, "a", 203)
	createMany(t, s, "b", 5)
	// A store whose cache never runs serves everything from the store.
	uncached := NewStore(c.local(0), "/registry/configmaps",
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.ConfigMapList{} }, StoreOptions{Logger: testLogger()})

	tests := []struct {
		name  string
		s     *Store
		first ListOptions
		pred  Predicate
		want  int
	}{
		{"consistent", s, ListOptions{Limit: 25}, nil, 203},
		{"from cache", s, ListOptions{Limit: 25, ResourceVersion: "0"}, nil, 203},
		{"predicate, consistent", s, ListOptions{Limit: 15}, evenLabel, 102},
		{"predicate, from cache", s, ListOptions{Limit: 15, ResourceVersion: "0"}, evenLabel, 102},
		{"exact", s, ListOptions{Limit: 50, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, nil, 203},
		{"store", uncached, ListOptions{Limit: 25}, nil, 203},
		{"predicate, store", uncached, ListOptions{Limit: 15}, evenLabel, 102},
		{"predicate, store, one item a page", uncached, ListOptions{Limit: 1}, evenLabel, 102},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			opts := tt.first
			opts.Predicate = tt.pred
			if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
				rev, _ := s.currentRevision(ctx)
				opts.ResourceVersion = strconv.FormatInt(rev, 10)
			}
			seen := map[string]bool{}
			var listRV string
			pages := 0
			for {
				list, err := s.List(ctx, s.Prefix("a"), opts)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				l := list.(*corev1.ConfigMapList)
				if listRV == "" {
					listRV = l.ResourceVersion
				} else if l.ResourceVersion != listRV {
					t.Fatalf("page %d at resourceVersion %s, first page at %s", pages, l.ResourceVersion, listRV)
				}
				if int64(len(l.Items)) > tt.first.Limit {
					t.Fatalf("page of %d items, limit %d", len(l.Items), tt.first.Limit)
				}
				if l.Continue != "" && int64(len(l.Items)) != tt.first.Limit {
					t.Fatalf("page %d has %d items and a continue token", pages, len(l.Items))
				}
				if l.Continue != "" && tt.pred == nil {
					if l.RemainingItemCount == nil || int(*l.RemainingItemCount) != tt.want-len(seen)-len(l.Items) {
						t.Fatalf("remainingItemCount %v with %d seen", l.RemainingItemCount, len(seen)+len(l.Items))
					}
				}
				if l.Kind != "ConfigMapList" || l.APIVersion != "v1" {
					t.Fatalf("list TypeMeta %+v", l.TypeMeta)
				}
				for _, item := range l.Items {
					if seen[item.Name] {
						t.Fatalf("%s listed twice", item.Name)
					}
					if item.Namespace != "a" || (tt.pred != nil && !tt.pred(&item)) {
						t.Fatalf("%s/%s does not belong in the list", item.Namespace, item.Name)
					}
					seen[item.Name] = true
				}
				if l.Continue == "" {
					break
				}
				opts = ListOptions{Limit: tt.first.Limit, Continue: l.Continue, Predicate: tt.pred}
			}
			if len(seen) != tt.want {
				t.Fatalf("listed %d objects in %d pages, want %d", len(seen), pages, tt.want)
			}
		})
	}

	t.Run("all namespaces, no limit", func(t *testing.T) {
		for _, rv := range []string{"", "0"} {
			list, err := s.List(ctx, s.Prefix(""), ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			if l := list.(*corev1.ConfigMapList); len(l.Items) != 208 || l.Continue != "" {
				t.Fatalf("rv=%q: %d items, continue %q", rv, len(l.Items), l.Continue)
			}
		}
	})
	t.Run("one key", func(t *testing.T) {
		list, err := s.List(ctx, s.Key("b", "cm-001"), ListOptions{})
		if err != nil || names(list) != "cm-001" {
			t.Fatalf("list of one key: %q %v", names(list), err)
		}
	})
}

func TestListResourceVersionSemantics(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	kv := &countingKV{KV: c.local(0).KV}
	b := c.local(0)
	b.KV = kv
	s := newConfigMapStore(t, b, StoreOptions{FreshnessTimeout: 500 * time.Millisecond})
	// Writes through another API server's store: the list must see them.
	other := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	before := createMany(t, other, "ns", 3)
	if _, err := other.Delete(ctx, other.Key("ns", "cm-000"), nil, nil); err != nil {
		t.Fatal(err)
	}

	list := func(opts ListOptions) (string, int64, error) {
		t.Helper()
		gets := kv.gets.Load()
		l, err := s.List(ctx, s.Prefix("ns"), opts)
		if err != nil {
			return "", kv.gets.Load() - gets, err
		}
		return names(l), kv.gets.Load() - gets, nil
	}

	t.Run("consistent read sees the latest write", func(t *testing.T) {
		got, gets, err := list(ListOptions{})
		if err != nil || got != "cm-001,cm-002" {
			t.Fatalf("got %q %v", got, err)
		}
		// One read for the store's revision; the items came from the cache.
		if gets != 1 {
			t.Fatalf("consistent list made %d store reads, want 1", gets)
		}
	})
	t.Run("consistent read when another resource moved the revision", func(t *testing.T) {
		if _, err := kv.Put(ctx, "/registry/other/x", "y"); err != nil {
			t.Fatal(err)
		}
		// The cache learns it is current through a progress notification.
		got, gets, err := list(ListOptions{})
		if err != nil || got != "cm-001,cm-002" || gets != 1 {
			t.Fatalf("got %q after %d store reads, err %v", got, gets, err)
		}
	})
	t.Run("resourceVersion 0 is served by the cache", func(t *testing.T) {
		got, gets, err := list(ListOptions{ResourceVersion: "0"})
		if err != nil || got != "cm-001,cm-002" || gets != 0 {
			t.Fatalf("got %q after %d store reads, err %v", got, gets, err)
		}
	})
	t.Run("exact shows the past", func(t *testing.T) {
		got, gets, err := list(ListOptions{ResourceVersion: strconv.FormatInt(before, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil || got != "cm-000,cm-001,cm-002" || gets != 1 {
			t.Fatalf("got %q after %d store reads, err %v", got, gets, err)
		}
	})
	t.Run("not older than", func(t *testing.T) {
		got, _, err := list(ListOptions{ResourceVersion: strconv.FormatInt(before, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil || got != "cm-001,cm-002" {
			t.Fatalf("got %q %v", got, err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		future := strconv.FormatInt(before+1000, 10)
		for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchExact} {
			_, _, err := list(ListOptions{ResourceVersion: future, ResourceVersionMatch: match})
			if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
				t.Fatalf("match %q: %v, want 504 too large", match, err)
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, o := range []ListOptions{
			{ResourceVersion: "x"},
			{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			{ResourceVersion: "1", Continue: "abc"},
			{Continue: "not-a-token"},
			{Limit: -1},
		} {
			if _, _, err := list(o); !apierrors.IsBadRequest(err) {
				t.Errorf("%+v: %v, want 400", o, err)
			}
		}
	})

	t.Run("compacted", func(t *testing.T) {
		page, err := s.List(ctx, s.Prefix("ns"), ListOptions{Limit: 1})
		if err != nil || page.(*corev1.ConfigMapList).Continue == "" {
			t.Fatalf("first page: %v", err)
		}
		// Move on, so the continue token's revision is not the cache's.
		if _, err := s.Create(ctx, s.Key("ns", "late"), cm("ns", "late", nil), 0); err != nil {
			t.Fatal(err)
		}
		rev, _ := s.currentRevision(ctx)
		// A list not older than rev returns once the cache has caught up:
		// until then it could still serve the token's revision itself.
		if _, _, err := list(ListOptions{ResourceVersion: strconv.FormatInt(rev, 10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Compact(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if _, _, err := list(ListOptions{ResourceVersion: strconv.FormatInt(before, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
			t.Fatalf("exact list at a compacted revision: %v, want 410", err)
		}
		if _, _, err := list(ListOptions{Limit: 1, Continue: page.(*corev1.ConfigMapList).Continue}); !apierrors.IsResourceExpired(err) {
			t.Fatalf("continue at a compacted revision: %v, want 410", err)
		}
		if _, _, err := list(ListOptions{ResourceVersion: strconv.FormatInt(before, 10)}); err != nil {
			t.Fatalf("not-older-than an old revision after compaction: %v", err)
		}
	})
}

func TestGetFromCacheIsACopy(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := context.Background()
	out, err := s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, s.Key("ns", "a"), GetOptions{ResourceVersion: rvOf(t, out)})
	if err != nil {
		t.Fatal(err)
	}
	got.(*corev1.ConfigMap).Name = "changed"
	again, _ := s.Get(ctx, s.Key("ns", "a"), GetOptions{ResourceVersion: "0"})
	if again.(*corev1.ConfigMap).Name != "a" {
		t.Fatal("a change to a Get result reached the cache")
	}
}
