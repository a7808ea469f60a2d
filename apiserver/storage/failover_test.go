package storage

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// recorder keeps every event a watch delivers.
type recorder struct {
	mu     sync.Mutex
	events []watch.Event
}

func record(w watch.Interface) *recorder {
	r := &recorder{}
	go func() {
		for ev := range w.ResultChan() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) snapshot() []watch.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]watch.Event(nil), r.events...)
}

// checkNoGap compares a watch's events with the objects the store holds:
// each created once, in revision order, none missing.
func checkNoGap(t *testing.T, who string, events []watch.Event, want []string) {
	t.Helper()
	var got []string
	last := int64(0)
	for _, ev := range events {
		o, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok {
			t.Fatalf("%s: unexpected %s", who, describe(ev))
		}
		rv, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
		if rv <= last {
			t.Fatalf("%s: resourceVersion %d after %d", who, rv, last)
		}
		last = rv
		got = append(got, o.Name+"@"+o.ResourceVersion)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s saw %d events, the store holds %d objects:\n got %v\nwant %v", who, len(got), len(want), got, want)
	}
}

func TestWatchesKeepEveryEventAcrossALeaderKill(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3)
	leader := c.waitLeader()
	follower := (leader + 1) % 3
	other := (leader + 2) % 3
	// A co-located API server on a follower, and a standalone one on an
	// etcd client of every replica.
	colocated := newConfigMapStore(t, c.local(follower), StoreOptions{})
	standalone := newConfigMapStore(t, clientBackend(c.client()), StoreOptions{})
	// The API server a client moves to; its cache, like every API
	// server's, runs all along (a cache started later has no history and
	// answers an older resourceVersion with 410 Gone, as Kubernetes does).
	elsewhere := newConfigMapStore(t, c.local(other), StoreOptions{})
	ctx := ctxT(t)
	start, err := colocated.currentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := strconv.FormatInt(start, 10)
	wa, _ := colocated.Watch(ctx, colocated.Prefix(""), WatchOptions{ResourceVersion: from})
	defer wa.Stop()
	wb, _ := standalone.Watch(ctx, standalone.Prefix(""), WatchOptions{ResourceVersion: from})
	defer wb.Stop()
	ra, rb := record(wa), record(wb)

	// Writers through the standalone store; failures during the election
	// are expected, and a failed write may still have been applied.
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%04d", w, i)
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if _, err := standalone.Create(wctx, standalone.Key("ns", name), cm("ns", name, nil), 0); err == nil {
					acked.Add(1)
				}
				cancel()
			}
		}(w)
	}
	waitFor(t, func() bool { return acked.Load() > 100 })
	c.stop(leader)
	c.waitLeader()
	before := acked.Load()
	waitFor(t, func() bool { return acked.Load() > before+100 })
	close(stop)
	wg.Wait()

	list, err := standalone.List(ctx, standalone.Prefix(""), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.(*corev1.ConfigMapList).Items
	sort.Slice(items, func(i, j int) bool {
		a, _ := strconv.ParseInt(items[i].ResourceVersion, 10, 64)
		b, _ := strconv.ParseInt(items[j].ResourceVersion, 10, 64)
		return a < b
	})
	var want []string
	for _, it := range items {
		want = append(want, it.Name+"@"+it.ResourceVersion)
	}
	waitFor(t, func() bool { return len(ra.snapshot()) >= len(want) && len(rb.snapshot()) >= len(want) })
	checkNoGap(t, "co-located watch", ra.snapshot(), want)
	checkNoGap(t, "standalone watch", rb.snapshot(), want)
	t.Logf("%d objects written across the leader kill, %d acknowledged", len(want), acked.Load())

	// A client that saw half the events resumes on another replica.
	half := ra.snapshot()[len(want)/2].Object.(*corev1.ConfigMap).ResourceVersion
	wc, err := elsewhere.Watch(ctx, elsewhere.Prefix(""), WatchOptions{ResourceVersion: half})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Stop()
	rc := record(wc)
	rest := want[len(want)/2+1:]
	waitFor(t, func() bool { return len(rc.snapshot()) >= len(rest) })
	checkNoGap(t, "resumed watch", rc.snapshot(), rest)
}
