package storage

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions selects what a watch sends.
type WatchOptions struct {
	// ResourceVersion: "" or "0" first sends the current objects as ADDED
	// events ("" as fresh as a consistent read when the store answers in
	// time, "0" whatever the cache holds), then changes; "N" sends the
	// changes after N.
	ResourceVersion string
	Predicate       Predicate
	// AllowBookmarks asks for periodic BOOKMARK events carrying only a
	// resourceVersion, from which the client may resume.
	AllowBookmarks bool
	// SendInitialEvents (Kubernetes' watch-list) overrides whether the
	// current objects are sent first: true sends them for any
	// ResourceVersion (at least as fresh as it), then a bookmark annotated
	// k8s.io/initial-events-end if AllowBookmarks; false never sends them.
	SendInitialEvents *bool
}

// Watch serves a watch of keyPrefix (a range when it ends with "/", else
// one key) from the watch cache; Run must have been called. A
// resourceVersion older than the cache's window of events gets a watch
// that sends one ERROR event with a 410 Gone Status and ends, as
// Kubernetes does; the client lists again. The watch ends when ctx does,
// when the client calls Stop, or when the store ends it (see WatchError):
// then ResultChan closes.
func (s *Store) Watch(ctx context.Context, keyPrefix string, opts WatchOptions) (watch.Interface, error) {
	if err := s.checkPrefix(keyPrefix); err != nil {
		return nil, err
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
	}
	if !s.cache.waitFresh(ctx, 0, s.opts.FreshnessTimeout, nil) {
		return nil, apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	}
	switch {
	case initial && opts.ResourceVersion == "":
		// Best effort: a consistent start when the store answers in time,
		// else the cache's current state.
		if cur, err := s.currentRevision(ctx); err == nil {
			s.cache.waitFresh(ctx, cur, s.opts.FreshnessTimeout, s.requestProgress)
		}
	case initial && rv > 0:
		if !s.cache.waitFresh(ctx, rv, s.opts.FreshnessTimeout, s.requestProgress) {
			return nil, newTooLargeResourceVersionError(rv, s.cacheRevision())
		}
	}

	w := &cacheWatcher{
		cache:     s.cache,
		keyPrefix: keyPrefix,
		exact:     !strings.HasSuffix(keyPrefix, "/"),
		pred:      opts.Predicate,
		bookmarks: opts.AllowBookmarks,
		input:     make(chan *event, s.opts.WatchChanSize),
		result:    make(chan watch.Event),
		stop:      make(chan struct{}),
	}
	var init initialEvents
	c := s.cache
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return nil, apierrors.NewTooManyRequests("storage is (re)initializing", 1)
	}
	if initial {
		init.snapshot = c.tree.Clone()
		w.startRV = c.rv
		if opts.SendInitialEvents != nil && opts.AllowBookmarks {
			init.endBookmark = bookmarkObject(s.newFunc, s.codec.gvk, c.rv, true)
		}
	} else if rv == 0 {
		w.startRV = c.rv // "" or "0" without initial events: from now on
	} else {
		if rv < c.windowStart {
			oldest := c.windowStart
			c.mu.Unlock()
			return newErrorWatch(&newTooOldResourceVersionError(rv, oldest).ErrStatus), nil
		}
		init.events = c.unsafeEventsAfter(rv)
		w.startRV = rv
	}
	c.watchers[w] = struct{}{}
	c.mu.Unlock()
	go w.run(ctx, init)
	return w, nil
}

func (s *Store) cacheRevision() int64 {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.rv
}
