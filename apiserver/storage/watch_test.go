package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// next returns a watch's next event, failing after a few seconds.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch ended (%v)", WatchError(w))
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
	}
	return watch.Event{}
}

// describe renders an event as TYPE name@rv (data k=v).
func describe(ev watch.Event) string {
	switch o := ev.Object.(type) {
	case *corev1.ConfigMap:
		s := fmt.Sprintf("%s %s@%s", ev.Type, o.Name, o.ResourceVersion)
		if v, ok := o.Data["k"]; ok {
			s += " k=" + v
		}
		return s
	case *metav1.Status:
		return fmt.Sprintf("%s %d", ev.Type, o.Code)
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

func expectEvents(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for i, wantEv := range want {
		if got := describe(next(t, w)); got != wantEv {
			t.Fatalf("event %d: got %q, want %q", i, got, wantEv)
		}
	}
}

func expectQuiet(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s", describe(ev))
		}
	case <-time.After(d):
	}
}

// mustRV returns a function that takes a write's results and returns its
// resourceVersion, failing the test on error.
func mustRV(t *testing.T) func(runtime.Object, error) string {
	return func(obj runtime.Object, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rvOf(t, obj)
	}
}

func TestWatchFromResourceVersionReplaysEveryChange(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	rv0 := mustRV(t)(s.Create(ctx, s.Key("ns", "zero"), cm("ns", "zero", nil), 0))
	rvA := mustRV(t)(s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil, "k", "1"), 0))
	rvA2 := mustRV(t)(s.GuaranteedUpdate(ctx, s.Key("ns", "a"), nil, setData("k", "2"), false))
	rvB := mustRV(t)(s.Create(ctx, s.Key("other", "b"), cm("other", "b", nil), 0))
	last, err := s.Delete(ctx, s.Key("ns", "a"), nil, nil)
	rvDel := mustRV(t)(last, err)

	w, err := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: rv0})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvents(t, w, "ADDED a@"+rvA+" k=1", "MODIFIED a@"+rvA2+" k=2", "DELETED a@"+rvDel+" k=2")
	all, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: rvA2})
	defer all.Stop()
	expectEvents(t, all, "ADDED b@"+rvB, "DELETED a@"+rvDel+" k=2")
	one, _ := s.Watch(ctx, s.Key("ns", "zero"), WatchOptions{ResourceVersion: rv0})
	defer one.Stop()

	// Live events follow the replay.
	rvC := mustRV(t)(s.Create(ctx, s.Key("ns", "c"), cm("ns", "c", nil), 0))
	rv02 := mustRV(t)(s.GuaranteedUpdate(ctx, s.Key("ns", "zero"), nil, setData("k", "z"), false))
	expectEvents(t, w, "ADDED c@"+rvC, "MODIFIED zero@"+rv02+" k=z")
	expectEvents(t, one, "MODIFIED zero@"+rv02+" k=z")

	// A watch from a future revision waits for it.
	future, _ := strconv.ParseInt(rv02, 10, 64)
	fw, _ := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: strconv.FormatInt(future+1, 10)})
	defer fw.Stop()
	mustRV(t)(s.Create(ctx, s.Key("ns", "d"), cm("ns", "d", nil), 0)) // future+1: not after it
	rvE := mustRV(t)(s.Create(ctx, s.Key("ns", "e"), cm("ns", "e", nil), 0))
	expectEvents(t, fw, "ADDED e@"+rvE)
}

func TestWatchFromZeroSendsTheCurrentStateFirst(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			ns := "ns" + rv
			rvA := mustRV(t)(s.Create(ctx, s.Key(ns, "a"), cm(ns, "a", nil), 0))
			rvB := mustRV(t)(s.Create(ctx, s.Key(ns, "b"), cm(ns, "b", nil), 0))
			w, err := s.Watch(ctx, s.Prefix(ns), WatchOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			expectEvents(t, w, "ADDED a@"+rvA, "ADDED b@"+rvB)
			rvC := mustRV(t)(s.Create(ctx, s.Key(ns, "c"), cm(ns, "c", nil), 0))
			expectEvents(t, w, "ADDED c@"+rvC)
		})
	}
	t.Run("without initial events", func(t *testing.T) {
		no := false
		w, _ := s.Watch(ctx, s.Prefix("ns"), WatchOptions{SendInitialEvents: &no})
		defer w.Stop()
		rvD := mustRV(t)(s.Create(ctx, s.Key("ns", "d"), cm("ns", "d", nil), 0))
		expectEvents(t, w, "ADDED d@"+rvD)
	})
}

func TestWatchListEndsInitialEventsWithABookmark(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	rvA := mustRV(t)(s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0))
	yes := true
	w, err := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: rvA, SendInitialEvents: &yes, AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expectEvents(t, w, "ADDED a@"+rvA)
	bm := next(t, w)
	o := bm.Object.(*corev1.ConfigMap)
	if bm.Type != watch.Bookmark || o.Annotations[metav1.InitialEventsAnnotationKey] != "true" || o.ResourceVersion < rvA {
		t.Fatalf("after the initial events: %s %+v", bm.Type, o.ObjectMeta)
	}
}

func TestWatchTooOldResourceVersionIsGone(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{WatchWindow: 5})
	ctx := ctxT(t)
	var rvs []string
	for i := 0; i < 10; i++ {
		rvs = append(rvs, mustRV(t)(s.Create(ctx, s.Key("ns", strconv.Itoa(i)), cm("ns", strconv.Itoa(i), nil), 0)))
	}
	// Wait for the cache to hold the last write, so the window has moved.
	if _, err := s.Get(ctx, s.Key("ns", "9"), GetOptions{ResourceVersion: rvs[9]}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		from string
		want string
	}{
		{rvs[0], "ERROR 410"},
		{rvs[3], "ERROR 410"},
		{rvs[4], "ADDED 5@" + rvs[5]},
		{rvs[8], "ADDED 9@" + rvs[9]},
	}
	for _, tt := range tests {
		t.Run("from "+tt.from, func(t *testing.T) {
			w, err := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: tt.from})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			expectEvents(t, w, tt.want)
		})
	}
}

func TestWatchPredicateTransitions(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx := ctxT(t)
	prod := func(obj runtime.Object) bool { return obj.(*corev1.ConfigMap).Labels["env"] == "prod" }
	setEnv := func(env string) func(runtime.Object) (runtime.Object, error) {
		return func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Labels = map[string]string{"env": env}
			return cur, nil
		}
	}
	w, err := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: "0", Predicate: prod})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	key := s.Key("ns", "a")
	mustRV(t)(s.Create(ctx, key, cm("ns", "a", map[string]string{"env": "dev"}), 0))
	rvProd := mustRV(t)(s.GuaranteedUpdate(ctx, key, nil, setEnv("prod"), false))
	rvData := mustRV(t)(s.GuaranteedUpdate(ctx, key, nil, setData("k", "v"), false))
	rvDev := mustRV(t)(s.GuaranteedUpdate(ctx, key, nil, setEnv("dev"), false))
	mustRV(t)(s.Delete(ctx, key, nil, nil))
	mustRV(t)(s.Create(ctx, s.Key("ns", "b"), cm("ns", "b", map[string]string{"env": "prod"}), 0))
	// Leaving the selection is a DELETED with the last matching state at
	// the update's resourceVersion.
	expectEvents(t, w, "ADDED a@"+rvProd, "MODIFIED a@"+rvData+" k=v", "DELETED a@"+rvDev+" k=v")
	ev := next(t, w)
	if describe(ev) != "ADDED b@"+rvOf(t, ev.Object) || ev.Object.(*corev1.ConfigMap).Name != "b" {
		t.Fatalf("then %s, want ADDED b", describe(ev))
	}
}

func TestWatchBookmarks(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{BookmarkInterval: 100 * time.Millisecond})
	ctx := ctxT(t)
	rv := mustRV(t)(s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0))
	with, _ := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: rv, AllowBookmarks: true})
	defer with.Stop()
	without, _ := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: rv})
	defer without.Stop()
	// A write elsewhere moves the store's revision; bookmarks follow it
	// through progress notifications.
	put, err := c.local(0).KV.Put(ctx, "/registry/other/x", "y")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ev := next(t, with)
		o := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Bookmark || o.Name != "" || o.Kind != "ConfigMap" {
			t.Fatalf("got %s %+v, want a bookmark with only a resourceVersion", ev.Type, o)
		}
		if o.ResourceVersion == strconv.FormatInt(put.Header.Revision, 10) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bookmarks stuck at %s, store at %d", o.ResourceVersion, put.Header.Revision)
		}
	}
	expectQuiet(t, without, 300*time.Millisecond)
}

func TestSlowWatcherIsDroppedWithoutBlockingOthers(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{WatchChanSize: 4})
	ctx := ctxT(t)
	slow, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: "0"})
	defer slow.Stop()
	fast, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: "0"})
	defer fast.Stop()
	const n = 30
	got := make(chan int)
	go func() {
		seen := 0
		for range fast.ResultChan() {
			if seen++; seen == n {
				break
			}
		}
		got <- seen
	}()
	for i := 0; i < n; i++ {
		mustRV(t)(s.Create(ctx, s.Key("ns", strconv.Itoa(i)), cm("ns", strconv.Itoa(i), nil), 0))
	}
	select {
	case seen := <-got:
		if seen != n {
			t.Fatalf("the fast watcher saw %d of %d events", seen, n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fast watcher was held back")
	}
	// The slow one has at most its buffer and one event in hand, then ends.
	received := 0
	for range slow.ResultChan() {
		received++
	}
	if received >= n || !errors.Is(WatchError(slow), ErrWatcherTooSlow) {
		t.Fatalf("slow watcher got %d events and ended with %v", received, WatchError(slow))
	}
}

func TestThousandWatchersShareOneStoreWatch(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	counter := &countingWatcher{Watcher: b.Watcher}
	b.Watcher = counter
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	rv := mustRV(t)(s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0))
	const n = 1000
	watchers := make([]watch.Interface, n)
	for i := range watchers {
		w, err := s.Watch(ctx, s.Prefix("ns"), WatchOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers[i] = w
	}
	start := time.Now()
	rv2 := mustRV(t)(s.GuaranteedUpdate(ctx, s.Key("ns", "a"), nil, setData("k", "v"), false))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for _, w := range watchers {
		wg.Add(1)
		go func(w watch.Interface) {
			defer wg.Done()
			select {
			case ev := <-w.ResultChan():
				if describe(ev) != "MODIFIED a@"+rv2+" k=v" {
					t.Errorf("got %s", describe(ev))
				}
			case <-time.After(5 * time.Second):
				t.Error("a watcher missed the change")
			}
			mu.Lock()
			slowest = max(slowest, time.Since(start))
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	t.Logf("%d watchers saw the change within %v of the write's start", n, slowest)
	if got := counter.watches.Load(); got != 1 {
		t.Fatalf("%d store watches for %d API watchers, want 1", got, n)
	}
}

func TestWatchesSurviveABrokenStoreWatch(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	counter := &countingWatcher{Watcher: b.Watcher}
	b.Watcher = counter
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	w, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: "0"})
	defer w.Stop()
	var want []string
	for i := 0; i < 20; i++ {
		if i%5 == 0 {
			counter.breakWatches(false)
		}
		rv := mustRV(t)(s.Create(ctx, s.Key("ns", strconv.Itoa(i)), cm("ns", strconv.Itoa(i), nil), 0))
		want = append(want, "ADDED "+strconv.Itoa(i)+"@"+rv)
	}
	expectEvents(t, w, want...)
	if counter.watches.Load() < 2 {
		t.Fatal("the store watch was not re-established")
	}
}

func TestRelistAfterCompactionEndsWatchesThatCannotResume(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	counter := &countingWatcher{Watcher: b.Watcher}
	b.Watcher = counter
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	rv := mustRV(t)(s.Create(ctx, s.Key("ns", "a"), cm("ns", "a", nil), 0))
	w, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: rv})

	// The store watch breaks and, while it is down, the store moves on and
	// compacts: the cache cannot resume and lists again.
	release := counter.breakWatches(true)
	waitFor(t, func() bool { return counter.held.Load() == 1 }) // the old watch is over
	mustRV(t)(s.Create(ctx, s.Key("ns", "b"), cm("ns", "b", nil), 0))
	mustRV(t)(s.Create(ctx, s.Key("ns", "c"), cm("ns", "c", nil), 0))
	// Compacting at c's revision puts b's, where the cache would resume,
	// out of reach.
	cur, _ := s.currentRevision(ctx)
	if _, err := b.KV.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	release()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("the watch got %s across the relist", describe(ev))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch was not ended by the relist")
	}
	if !errors.Is(WatchError(w), errRelisted) {
		t.Fatalf("watch ended with %v", WatchError(w))
	}
	waitFor(t, s.Ready)
	again, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: rv})
	defer again.Stop()
	expectEvents(t, again, "ERROR 410")
	list, err := s.List(ctx, s.Prefix(""), ListOptions{ResourceVersion: "0"})
	if err != nil || names(list) != "a,b,c" {
		t.Fatalf("list after relist: %q %v", names(list), err)
	}
	fresh, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: rvOf(t, list)})
	defer fresh.Stop()
	rvD := mustRV(t)(s.Create(ctx, s.Key("ns", "d"), cm("ns", "d", nil), 0))
	expectEvents(t, fresh, "ADDED d@"+rvD)
}

func TestWatchEndsWithItsContextAndStop(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	s := newConfigMapStore(t, c.local(0), StoreOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{})
	cancel()
	for range w.ResultChan() {
	}
	w2, _ := s.Watch(context.Background(), s.Prefix(""), WatchOptions{})
	w2.Stop()
	for range w2.ResultChan() {
	}
	if WatchError(w) != nil || WatchError(w2) != nil {
		t.Fatalf("errors %v %v for watches ended by their client", WatchError(w), WatchError(w2))
	}
	waitFor(t, func() bool { return s.cache.watcherCount() == 0 })
	w3, _ := s.Watch(context.Background(), s.Prefix(""), WatchOptions{})
	s.Stop()
	for range w3.ResultChan() {
	}
	if !strings.Contains(fmt.Sprint(WatchError(w3)), "stopped") {
		t.Fatalf("watch after Stop ended with %v", WatchError(w3))
	}
}

func TestWatchSeesEveryKeyOfATransaction(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	b := c.local(0)
	s := newConfigMapStore(t, b, StoreOptions{})
	ctx := ctxT(t)
	w, _ := s.Watch(ctx, s.Prefix(""), WatchOptions{})
	defer w.Stop()
	x, _ := s.Codec().Encode(cm("ns", "x", nil))
	y, _ := s.Codec().Encode(cm("ns", "y", nil))
	resp, err := b.KV.Txn(ctx).Then(
		clientv3.OpPut(s.Key("ns", "x"), string(x)),
		clientv3.OpPut(s.Key("ns", "y"), string(y))).Commit()
	if err != nil {
		t.Fatal(err)
	}
	rv := strconv.FormatInt(resp.Header.Revision, 10)
	expectEvents(t, w, "ADDED x@"+rv, "ADDED y@"+rv)
	list, err := s.List(ctx, s.Prefix(""), ListOptions{ResourceVersion: rv})
	if err != nil || names(list) != "x,y" {
		t.Fatalf("list: %q %v", names(list), err)
	}
}
