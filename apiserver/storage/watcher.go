package storage

import (
	"context"
	"strings"
	"sync"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Predicate selects objects for List and Watch (label and field selectors
// are the caller's). nil selects everything. It must not modify obj.
type Predicate func(obj runtime.Object) bool

func (p Predicate) matches(obj runtime.Object) bool { return p == nil || p(obj) }

// cacheWatcher is one API watch served by the watch cache. The cache
// offers it events through input without ever blocking; its own goroutine
// filters them and hands them to the client through result.
type cacheWatcher struct {
	cache     *watchCache
	keyPrefix string
	exact     bool // keyPrefix is one key, not a range
	pred      Predicate
	bookmarks bool
	// startRV: events at or before it are already reflected in what the
	// client has; later ones are sent.
	startRV int64

	input  chan *event
	result chan watch.Event

	once sync.Once
	stop chan struct{}
	err  error // why the cache ended the watch; set before stop closes
}

func (w *cacheWatcher) inScope(key string) bool {
	if w.exact {
		return key == w.keyPrefix
	}
	return strings.HasPrefix(key, w.keyPrefix)
}

// ResultChan implements watch.Interface.
func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface: it ends the watch; ResultChan closes.
func (w *cacheWatcher) Stop() { w.terminate(nil) }

// Err implements watchError.
func (w *cacheWatcher) Err() error {
	select {
	case <-w.stop:
		return w.err
	default:
		return nil
	}
}

// terminate ends the watch once, recording why.
func (w *cacheWatcher) terminate(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.stop)
	})
}

// initialEvents is what a watcher sends before live events: a snapshot of
// the objects (as ADDED), or the window's events after its start.
type initialEvents struct {
	snapshot *btree.BTreeG[*entry]
	events   []*event
	// endBookmark, when set, is sent after the snapshot to tell the client
	// its initial state is complete.
	endBookmark runtime.Object
}

// run delivers the initial events, then live ones, until the client
// stops, ctx ends or the cache ends the watch.
func (w *cacheWatcher) run(ctx context.Context, init initialEvents) {
	defer close(w.result)
	defer w.cache.remove(w)
	send := func(ev watch.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-w.stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
	if init.snapshot != nil {
		start, end := keyRange(w.keyPrefix)
		ok := true
		init.snapshot.AscendRange(&entry{key: start}, &entry{key: end}, func(e *entry) bool {
			if w.pred.matches(e.obj) {
				ok = send(watch.Event{Type: watch.Added, Object: e.obj})
			}
			return ok
		})
		if !ok {
			return
		}
		if init.endBookmark != nil && !send(watch.Event{Type: watch.Bookmark, Object: init.endBookmark}) {
			return
		}
	}
	for _, ev := range init.events {
		if out, ok := w.convert(ev); ok && !send(out) {
			return
		}
	}
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case ev := <-w.input:
			if out, ok := w.convert(ev); ok && !send(out) {
				return
			}
		}
	}
}

// convert turns a cache event into what this watcher's client sees, as
// Kubernetes filters watches: an object that starts matching the
// predicate is ADDED, one that stops matching is DELETED (its previous
// state at the event's resourceVersion), and events on objects that match
// neither before nor after are not sent.
func (w *cacheWatcher) convert(ev *event) (watch.Event, bool) {
	if ev.typ == watch.Bookmark {
		// A bookmark may repeat the client's revision (a quiet store),
		// never go back before it.
		return watch.Event{Type: watch.Bookmark, Object: ev.obj}, w.bookmarks && ev.rev >= w.startRV
	}
	if ev.rev <= w.startRV {
		return watch.Event{}, false
	}
	if !w.inScope(ev.key) {
		return watch.Event{}, false
	}
	if ev.typ == watch.Deleted {
		return watch.Event{Type: watch.Deleted, Object: ev.obj}, w.pred.matches(ev.prev)
	}
	cur := w.pred.matches(ev.obj)
	old := ev.prev != nil && w.pred.matches(ev.prev)
	switch {
	case cur && old:
		return watch.Event{Type: watch.Modified, Object: ev.obj}, true
	case cur:
		return watch.Event{Type: watch.Added, Object: ev.obj}, true
	case old:
		return watch.Event{Type: watch.Deleted, Object: withResourceVersion(ev.prev, ev.rev)}, true
	}
	return watch.Event{}, false
}

// watchError is implemented by the watches Store.Watch returns.
type watchError interface{ Err() error }

// WatchError returns why the store ended a watch returned by Watch:
// ErrWatcherTooSlow for a client that fell behind, another error when the
// cache re-listed or stopped, nil while it runs or when the client stopped
// it. A client ended this way should watch again from the last
// resourceVersion it saw.
func WatchError(w watch.Interface) error {
	if we, ok := w.(watchError); ok {
		return we.Err()
	}
	return nil
}

// errorWatch is a watch that sends one error event and ends, which is how
// Kubernetes answers a watch from a resourceVersion that is too old.
type errorWatch struct{ ch chan watch.Event }

func newErrorWatch(status runtime.Object) *errorWatch {
	ch := make(chan watch.Event, 1)
	ch <- watch.Event{Type: watch.Error, Object: status}
	close(ch)
	return &errorWatch{ch: ch}
}

func (e *errorWatch) ResultChan() <-chan watch.Event { return e.ch }
func (e *errorWatch) Stop()                          {}
