package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Informers are tested in both ways client-go fills them: a streaming
// watch-list (its default since 1.35) and a list followed by a watch (its
// fallback, and what older clients do).
var informerModes = []struct {
	name      string
	watchList bool
}{
	{"ListThenWatch", false},
	{"WatchList", true},
}

// TestInformerSyncsWithClientGoDefaults is what every controller does
// first: a shared informer factory with client-go's defaults must sync.
func TestInformerSyncsWithClientGoDefaults(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	waitNamespace(t, cs, "default")
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, numberedConfigMap("first", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(c.client(1), 0)
	cms, pods := f.Core().V1().ConfigMaps(), f.Core().V1().Pods()
	cms.Informer()
	pods.Informer()
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("%v informer not synced within 10s: the watch-list stream never ended its initial events "+
				"(sendInitialEvents=true needs the k8s.io/initial-events-end bookmark)", typ)
		}
	}
	if _, err := cms.Lister().ConfigMaps("default").Get("first"); err != nil {
		t.Fatalf("synced configmap cache: %v", err)
	}
}

// TestInformersFollowChangesAndRelistCleanly runs pod and configmap
// informers through changes, then restarts their API server while objects
// change: the resumed watch is too old for the new server's cache (410
// Gone) and the informers must list again and converge, telling their
// handlers exactly what changed.
func TestInformersFollowChangesAndRelistCleanly(t *testing.T) {
	for _, mode := range informerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := newTestCluster(t, 3)
			ctx := ctxT(t)
			cs := c.unthrottledClient(t, 0)
			waitNamespace(t, cs, "default")
			c.waitCachesReady(t)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inf"}}
			if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitNamespace(t, cs, "inf")
			cms := cs.CoreV1().ConfigMaps("inf")
			pods := cs.CoreV1().Pods("inf")
			for _, name := range []string{"a", "b", "keep"} {
				if _, err := cms.Create(ctx, numberedConfigMap(name, 0), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			counter := &requestCounter{}
			ics := c.countingClient(t, 1, counter)
			cmInf := newInformer(ics, "configmaps", "inf", &corev1.ConfigMap{}, mode.watchList)
			podInf := newInformer(ics, "pods", "inf", &corev1.Pod{}, mode.watchList)
			cmEvents, podEvents := &informerEvents{}, &informerEvents{}
			cmEvents.handle(t, cmInf)
			podEvents.handle(t, podInf)
			runInformers(t, cmInf, podInf)

			t.Run("ChangesArrive", func(t *testing.T) {
				if _, err := cms.Create(ctx, numberedConfigMap("c", 0), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := cms.Update(ctx, numberedConfigMap("a", 1), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := pods.Create(ctx, testPod("p2"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := pods.Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
				cmEvents.waitFor(t, "add c", "update a", "delete b")
				podEvents.waitFor(t, "add p1", "add p2", "update p1")
				waitConverged(t, cmInf, cms.List)
				waitConverged(t, podInf, pods.List)
			})

			t.Run("RelistAfterAPIServerRestart", func(t *testing.T) {
				listsBefore := counter.lists("configmaps")
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				c.stopAPI(sctx, 1)
				// Missed by the informers, which must learn them by listing.
				if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := cms.Create(ctx, numberedConfigMap("d", 0), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := cms.Update(ctx, numberedConfigMap("c", 1), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := pods.Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
					t.Fatal(err)
				}
				c.restartAPI(1)

				cmEvents.waitFor(t, "delete a", "add d", "update c")
				podEvents.waitFor(t, "delete p2")
				waitConverged(t, cmInf, cms.List)
				waitConverged(t, podInf, pods.List)
				if got := counter.lists("configmaps"); got != listsBefore+1 {
					t.Errorf("configmap lists: %d before the restart, %d after, want exactly one relist", listsBefore, got)
				}
				// An object that never changed was announced once; a relist
				// may only confirm it.
				if n := cmEvents.count("add keep"); n != 1 {
					t.Errorf("keep was added %d times: %v", n, cmEvents.all())
				}
				if n := cmEvents.count("delete keep"); n != 0 {
					t.Errorf("keep was deleted: %v", cmEvents.all())
				}
			})
		})
	}
}

// TestWatchesSurviveReplicaDeath kills one store replica, the Raft leader
// or a follower, while a configmap goes through numbered updates. An
// informer on a surviving API server keeps its watch and sees every
// number; a watch on the dead replica's API server ends, and resuming it
// on another API server from its last resourceVersion misses nothing.
func TestWatchesSurviveReplicaDeath(t *testing.T) {
	const before, total = 10, 30
	for _, victim := range []string{"Leader", "Follower"} {
		t.Run("Kill"+victim, func(t *testing.T) {
			c := newTestCluster(t, 3)
			ctx := ctxT(t)
			c.waitCachesReady(t)
			leader := c.raftLeader(t)
			dead := leader
			if victim == "Follower" {
				dead = (leader + 1) % 3
			}
			watcher, writer := (dead+1)%3, (dead+2)%3
			cms := c.unthrottledClient(t, writer).CoreV1().ConfigMaps("default")
			waitNamespace(t, c.client(writer), "default")
			var first *corev1.ConfigMap
			retryTransient(t, func() (err error) {
				first, err = cms.Create(ctx, numberedConfigMap("seq", 0), metav1.CreateOptions{})
				return err
			})

			counter := &requestCounter{}
			inf := newInformer(c.countingClient(t, watcher, counter), "configmaps", "default", &corev1.ConfigMap{}, false)
			events := &informerEvents{}
			events.handle(t, inf)
			runInformers(t, inf)

			seqOnly := metav1.ListOptions{FieldSelector: "metadata.name=seq", ResourceVersion: first.ResourceVersion}
			w1, err := c.client(dead).CoreV1().ConfigMaps("default").Watch(ctx, seqOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer w1.Stop()
			seq := &numberSequence{}
			for n := 1; n <= before; n++ {
				setNumber(t, cms, "seq", n)
			}
			seq.read(t, w1, before)

			c.killReplica(dead)
			select {
			case ev, ok := <-w1.ResultChan():
				if ok {
					t.Fatalf("event %v %v from the dead replica's API server", ev.Type, ev.Object)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watch on the dead replica's API server did not end: its client cannot know it should go elsewhere")
			}

			for n := before + 1; n <= total; n++ {
				setNumber(t, cms, "seq", n)
			}
			seqOnly.ResourceVersion = seq.lastRV
			w2, err := c.client(watcher).CoreV1().ConfigMaps("default").Watch(ctx, seqOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Stop()
			seq.read(t, w2, total)

			want := make([]string, 0, total+1)
			want = append(want, "add seq 0")
			for n := 1; n <= total; n++ {
				want = append(want, fmt.Sprintf("update seq %d", n))
			}
			events.waitFor(t, want[len(want)-1])
			if got := events.numbered(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("informer on a surviving API server saw\n%v\nwant\n%v", got, want)
			}
			if l, w := counter.lists("configmaps"), counter.watches("configmaps"); l != 1 || w != 1 {
				t.Errorf("informer made %d lists and %d watches, want its first watch to survive", l, w)
			}
		})
	}
}

// numberedConfigMap is a configmap carrying a number, so that a sequence
// of updates can be checked for gaps.
func numberedConfigMap(name string, n int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": strconv.Itoa(n)}}
}

func numberOf(obj runtime.Object) int {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(cm.Data["n"])
	if err != nil {
		return -1
	}
	return n
}

type configMapClient interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
	Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
}

// setNumber sets a configmap's number to n exactly once, retrying while
// the store elects a leader. Each attempt is a compare-and-swap from a
// fresh read, so a write whose answer was lost is never applied twice.
func setNumber(t *testing.T, cms configMapClient, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var cm *corev1.ConfigMap
		cm, err = cms.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if numberOf(cm) >= n {
				cancel()
				return
			}
			cm.Data["n"] = strconv.Itoa(n)
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("setting %s to %d: %v", name, n, err)
}

// numberSequence checks that a watch delivers 1, 2, 3, ... in order.
type numberSequence struct {
	last   int
	lastRV string
}

func (s *numberSequence) read(t *testing.T, w watch.Interface, upTo int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for s.last < upTo {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %d", s.last)
			}
			n := numberOf(ev.Object)
			if n != s.last+1 {
				t.Fatalf("watch sent %v with number %d after %d: a gap or a repeat", ev.Type, n, s.last)
			}
			s.last = n
			s.lastRV = ev.Object.(*corev1.ConfigMap).ResourceVersion
		case <-timeout:
			t.Fatalf("watch stalled after %d, want up to %d", s.last, upTo)
		}
	}
}

// informerEvents records what an informer told its handlers, as "add x",
// "update x" or "delete x".
type informerEvents struct {
	mu     sync.Mutex
	events []string
	nums   []string // the same with the configmap's number
	change chan struct{}
}

func (e *informerEvents) handle(t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	e.change = make(chan struct{}, 1)
	record := func(verb string, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		ro, _ := obj.(runtime.Object)
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Errorf("informer handed %T to its handler", obj)
			return
		}
		e.mu.Lock()
		e.events = append(e.events, verb+" "+m.GetName())
		e.nums = append(e.nums, fmt.Sprintf("%s %s %d", verb, m.GetName(), numberOf(ro)))
		e.mu.Unlock()
		select {
		case e.change <- struct{}{}:
		default:
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { record("add", obj) },
		UpdateFunc: func(old, obj any) {
			om, _ := meta.Accessor(old)
			nm, _ := meta.Accessor(obj)
			// A relist confirms unchanged objects: not a change.
			if om != nil && nm != nil && om.GetResourceVersion() == nm.GetResourceVersion() {
				return
			}
			record("update", obj)
		},
		DeleteFunc: func(obj any) { record("delete", obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *informerEvents) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

func (e *informerEvents) numbered() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.nums...)
}

// count counts the recorded events equal to ev, with or without the
// configmap's number.
func (e *informerEvents) count(ev string) int {
	n := 0
	for _, got := range append(e.all(), e.numbered()...) {
		if got == ev {
			n++
		}
	}
	return n
}

// waitFor waits until every one of want has been recorded.
func (e *informerEvents) waitFor(t *testing.T, want ...string) {
	t.Helper()
	// After an API server restart an informer learns what it missed at
	// its reflector's next retry. client-go waits 0.8 s after a first
	// failure and doubles the wait after each one more, with up to as
	// much again of jitter: the fifth wait in a row can be 25.6 s.
	timeout := time.After(45 * time.Second)
	for {
		missing := ""
		for _, w := range want {
			if e.count(w) == 0 {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-e.change:
		case <-time.After(100 * time.Millisecond):
		case <-timeout:
			t.Fatalf("informer handlers never got %q; they got %v", missing, e.all())
		}
	}
}

// newInformer builds a shared informer as client-go's factories do;
// watchList false makes the reflector list and then watch.
func newInformer(cs kubernetes.Interface, resource, namespace string, example runtime.Object, watchList bool) cache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), resource, namespace, fields.Everything())
	var l cache.ListerWatcher = lw
	if !watchList {
		l = listThenWatch{lw}
	}
	return cache.NewSharedIndexInformer(l, example, 0, cache.Indexers{})
}

// listThenWatch tells the reflector not to use a watch-list, through
// client-go's documented opt-out.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// runInformers starts informers until t ends and waits for their sync.
func runInformers(t *testing.T, infs ...cache.SharedIndexInformer) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		go inf.Run(stop)
		synced = append(synced, inf.HasSynced)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("informers not synced within 10s")
	}
}

// waitConverged waits until an informer's cache holds exactly what a
// list from the API returns, resourceVersions included.
func waitConverged[L runtime.Object](t *testing.T, inf cache.SharedIndexInformer, list func(context.Context, metav1.ListOptions) (L, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := list(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(l)
		want := versions(items)
		var cached []runtime.Object
		for _, o := range inf.GetStore().List() {
			cached = append(cached, o.(runtime.Object))
		}
		got := versions(cached)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer cache holds %s, the API lists %s", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func versions(objs []runtime.Object) string {
	var out []string
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// requestCounter counts an informer's lists (a plain list or a watch-list)
// and watches per resource.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) RoundTrip(next http.RoundTripper, r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	kind := "list"
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		kind = "watch"
		if q.Get("sendInitialEvents") == "true" {
			kind = "list"
		}
	}
	resource := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[kind+" "+resource]++
	c.mu.Unlock()
	return next.RoundTrip(r)
}

func (c *requestCounter) lists(resource string) int   { return c.get("list " + resource) }
func (c *requestCounter) watches(resource string) int { return c.get("watch " + resource) }

func (c *requestCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingClient is an admin client of API server i whose requests
// counter sees.
func (c *testCluster) countingClient(t *testing.T, i int, counter *requestCounter) kubernetes.Interface {
	rc := c.restConfig(i, "admin", "system:masters")
	rc.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { return counter.RoundTrip(next, r) })
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
