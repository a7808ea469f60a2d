package storage

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// entry is one object in the watch cache: decoded once, with its
// resourceVersion set, and shared read-only by every reader from then on.
type entry struct {
	key string
	obj runtime.Object
}

func entryLess(a, b *entry) bool { return a.key < b.key }

// event is one change the cache saw, kept in its window and fanned out to
// watchers. For a deletion, obj is the last state with the deletion's
// resourceVersion and prev the last state as it was stored.
type event struct {
	typ  watch.EventType
	key  string
	obj  runtime.Object
	prev runtime.Object // nil for an addition
	rev  int64
}

// change is one store event, decoded, before it enters the cache.
type change struct {
	key string
	obj runtime.Object // nil for a deletion
	rev int64
	// skip marks a value that could not be decoded: only the revision
	// advances.
	skip bool
}

// watchCache is the in-memory image of one resource: the current objects
// in key order and a window of recent events.
//
// Worked example, window of 3 events, cache listed at revision 10:
//
//	list at 10              rv=10 windowStart=10 window=[]
//	put a@11, put b@12      rv=12 windowStart=10 window=[a@11 b@12]
//	progress notify 15      rv=15 (no event on this prefix in 13..15)
//	del a@16, put c@17      rv=17 windowStart=11 window=[b@12 a@16 c@17]
//
// A watch from resourceVersion N gets the window's events after N when
// N >= windowStart (from 11: b@12, a@16, c@17); from 10 it would miss a@11,
// which left the window, so it gets 410 Gone. N beyond rv is fine: the
// watcher skips events until the cache passes N.
type watchCache struct {
	windowSize int
	chanSize   int

	mu          sync.Mutex
	tree        *btree.BTreeG[*entry]
	rv          int64 // everything up to rv is in tree
	windowStart int64 // every event after windowStart is in window
	window      []*event
	head, n     int // ring buffer: oldest at head, n events
	ready       bool
	changes     uint64        // counts the changes of tree: replaces and events
	fresh       chan struct{} // closed, and replaced, when rv or ready change
	waiters     int           // readers waiting for rv to advance
	watchers    map[*cacheWatcher]struct{}
}

func newWatchCache(windowSize, chanSize int) *watchCache {
	return &watchCache{
		windowSize: windowSize,
		chanSize:   chanSize,
		tree:       btree.NewG(32, entryLess),
		window:     make([]*event, windowSize),
		fresh:      make(chan struct{}),
		watchers:   map[*cacheWatcher]struct{}{},
	}
}

// unsafeNotify wakes readers waiting for the cache to advance.
func (c *watchCache) unsafeNotify() {
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// replace installs a new full list at rev. Watchers are ended, as
// Kubernetes' cacher ends them on every relist: the events between the
// old and the new list are unknown, so each client resumes from its last
// resourceVersion and gets 410 Gone if that is now too old.
func (c *watchCache) replace(tree *btree.BTreeG[*entry], rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsafeTerminateAll(errRelisted)
	c.tree = tree
	c.rv = rev
	c.windowStart = rev
	clear(c.window)
	c.head, c.n = 0, 0
	c.ready = true
	c.changes++
	c.unsafeNotify()
}

// stop marks the cache unusable and ends every watcher.
func (c *watchCache) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsafeTerminateAll(errStopped)
	c.ready = false
	c.unsafeNotify()
}

func (c *watchCache) unsafeTerminateAll(err error) {
	for w := range c.watchers {
		delete(c.watchers, w)
		w.terminate(err)
	}
}

// apply adds one store watch response's changes, in revision order, and
// sends the resulting events to the watchers.
func (c *watchCache) apply(changes []change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// One transaction may change several keys at one revision, so only
	// revisions reflected before this batch are skipped (a resumed watch
	// may repeat them).
	before := c.rv
	for _, ch := range changes {
		if ch.rev <= before {
			continue
		}
		if ch.skip {
			c.rv = ch.rev
			continue
		}
		ev := &event{key: ch.key, rev: ch.rev}
		old, had := c.tree.Get(&entry{key: ch.key})
		if had {
			ev.prev = old.obj
		}
		switch {
		case ch.obj != nil:
			ev.typ, ev.obj = watch.Added, ch.obj
			if had {
				ev.typ = watch.Modified
			}
			c.tree.ReplaceOrInsert(&entry{key: ch.key, obj: ch.obj})
		case had:
			// The deletion carries the last state at the deletion's
			// resourceVersion; the copy keeps the stored object intact for
			// readers that still hold it.
			ev.typ, ev.obj = watch.Deleted, withResourceVersion(old.obj, ch.rev)
			c.tree.Delete(old)
		default:
			c.rv = ch.rev // a deletion of a key the cache could not decode
			continue
		}
		c.rv = ch.rev
		c.changes++
		c.unsafeAppend(ev)
		c.unsafeDispatch(ev)
	}
	c.unsafeNotify()
}

// progress records that the store has sent every event up to rev.
func (c *watchCache) progress(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > c.rv {
		c.rv = rev
		c.unsafeNotify()
	}
}

func (c *watchCache) unsafeAppend(ev *event) {
	if c.n == c.windowSize {
		c.windowStart = c.window[c.head].rev
		c.window[c.head] = ev
		c.head = (c.head + 1) % c.windowSize
		return
	}
	c.window[(c.head+c.n)%c.windowSize] = ev
	c.n++
}

// unsafeEventsAfter returns the window's events after rev, oldest first.
func (c *watchCache) unsafeEventsAfter(rev int64) []*event {
	at := func(i int) *event { return c.window[(c.head+i)%c.windowSize] }
	first := sort.Search(c.n, func(i int) bool { return at(i).rev > rev })
	out := make([]*event, 0, c.n-first)
	for i := first; i < c.n; i++ {
		out = append(out, at(i))
	}
	return out
}

// unsafeDispatch offers ev to every watcher in its scope without waiting:
// a watcher whose buffer is full is dropped, so that no client holds back
// the cache or the other watchers.
func (c *watchCache) unsafeDispatch(ev *event) {
	for w := range c.watchers {
		if !w.inScope(ev.key) {
			continue
		}
		select {
		case w.input <- ev:
		default:
			delete(c.watchers, w)
			w.terminate(ErrWatcherTooSlow)
		}
	}
}

// bookmark offers a bookmark to the watchers that asked for them; a full
// buffer just skips it, a later one will do.
func (c *watchCache) bookmark(newObj func() runtime.Object, gvk schema.GroupVersionKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return
	}
	var ev *event
	for w := range c.watchers {
		if !w.bookmarks {
			continue
		}
		if ev == nil {
			ev = &event{typ: watch.Bookmark, obj: bookmarkObject(newObj, gvk, c.rv, false), rev: c.rv}
		}
		select {
		case w.input <- ev:
		default:
		}
	}
}

func (c *watchCache) remove(w *cacheWatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watchers, w)
}

func (c *watchCache) watcherCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}

func (c *watchCache) isReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

func (c *watchCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return 0
	}
	return c.tree.Len()
}

func (c *watchCache) hasWaiters() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiters > 0
}

// snapshot returns an immutable copy of the current objects (a lazy
// copy-on-write clone: O(1)) and the revision it reflects.
func (c *watchCache) snapshot() (*btree.BTreeG[*entry], int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, 0, false
	}
	return c.tree.Clone(), c.rv, true
}

// snapshotAt is snapshot, only if the cache is exactly at rev.
func (c *watchCache) snapshotAt(rev int64) (*btree.BTreeG[*entry], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready || c.rv != rev {
		return nil, false
	}
	return c.tree.Clone(), true
}

// get returns the cached object at key and the cache's revision.
func (c *watchCache) get(key string) (runtime.Object, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.tree.Get(&entry{key: key})
	if !ok {
		return nil, c.rv, false
	}
	return e.obj, c.rv, true
}

// waitFresh waits until the cache is ready and has reached rev, for at
// most timeout; kick is called while waiting to ask the store for a
// progress notification, which advances rev when this prefix is quiet.
func (c *watchCache) waitFresh(ctx context.Context, rev int64, timeout time.Duration, kick func()) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	c.mu.Lock()
	c.waiters++
	defer func() { c.mu.Lock(); c.waiters--; c.mu.Unlock() }()
	for {
		if c.ready && c.rv >= rev {
			c.mu.Unlock()
			return true
		}
		fresh := c.fresh
		c.mu.Unlock()
		if kick != nil {
			kick()
		}
		select {
		case <-fresh:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
		c.mu.Lock()
	}
}
