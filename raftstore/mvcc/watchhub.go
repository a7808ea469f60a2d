package mvcc

import (
	"sync"
	"sync/atomic"
)

// hub fans the store's changes out to watchers without ever making the
// apply goroutine wait for a consumer. Each open watcher is in one group:
//
//   - synced: it has been handed every event up to the store revision. The
//     apply goroutine (notify) sends it each new revision's events at once,
//     without blocking.
//   - unsynced: it is behind; next is the first revision it still needs. A
//     catch-up goroutine (see syncPass) replays the revision log from next
//     in batches of whole revisions, and moves it to synced once it has
//     reached the store revision.
//
// A worked example, with a channel that holds two responses for brevity.
// The store is at revision 10, compacted at 4:
//
//  1. Watch{Key: "a", StartRev: 6}: unsynced, next=6. Catch-up replays
//     revisions 6..10 from the log in one batch (Revision 10); next=11, and
//     the watcher joins synced.
//  2. Put a (11) and put a (12): notify sends one response for each. The
//     consumer reads neither; the channel is full.
//  3. Put a (13): the send would block, so notify moves the watcher to
//     unsynced with next=13, the first revision it has not been handed.
//  4. Put a (14), put b (15): nothing is sent to the unsynced watcher.
//  5. The consumer reads 11 and 12. Catch-up replays 13..15, sends events
//     13 and 14 in one batch with Revision 15, and moves the watcher back
//     to synced: nothing was lost, duplicated or reordered.
//
// Had Compact(14) run during step 4, catch-up would have found next=13 < 14,
// sent {CompactRevision: 14} once the channel had room, and closed it.
//
// Locking: notify runs with the store lock held exclusively and catch-up
// with it held shared, so the two never interleave; mu guards the groups
// against Watch, Close and Synced from other goroutines. Order: store lock,
// then mu.
type hub struct {
	s  *Store
	mu sync.Mutex
	// keyW and rangeW are the synced watchers: single-key ones by key, the
	// rest to be checked one by one.
	keyW     map[string]map[*Watcher]struct{}
	rangeW   map[*Watcher]struct{}
	unsynced map[*Watcher]struct{}
	// nsynced lets notify skip mu entirely while nobody watches.
	nsynced atomic.Int64
	// running is true while the catch-up goroutine exists.
	running bool
	// touched is notify's scratch list of watchers with pending events.
	touched []*Watcher
}

func newHub(s *Store) *hub {
	return &hub{
		s:        s,
		keyW:     map[string]map[*Watcher]struct{}{},
		rangeW:   map[*Watcher]struct{}{},
		unsynced: map[*Watcher]struct{}{},
	}
}

// add registers a new watcher at store revision cur.
func (h *hub) add(w *Watcher, start, cur int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if start == 0 || start > cur {
		w.next = max(start, cur+1)
		h.unsafeAddSynced(w)
		return
	}
	w.next = start
	h.unsafeAddUnsynced(w)
}

func (h *hub) unsafeAddSynced(w *Watcher) {
	w.state = stateSynced
	h.nsynced.Add(1)
	if len(w.keys.end) == 0 {
		set := h.keyW[string(w.keys.key)]
		if set == nil {
			set = map[*Watcher]struct{}{}
			h.keyW[string(w.keys.key)] = set
		}
		set[w] = struct{}{}
		return
	}
	h.rangeW[w] = struct{}{}
}

func (h *hub) unsafeAddUnsynced(w *Watcher) {
	w.state = stateUnsynced
	h.unsynced[w] = struct{}{}
	h.unsafeStartCatchUp()
}

// unsafeRemove takes w out of its group and closes its channel, once.
func (h *hub) unsafeRemove(w *Watcher) {
	switch w.state {
	case stateClosed:
		return
	case stateSynced:
		h.unsafeRemoveSynced(w)
	case stateUnsynced:
		delete(h.unsynced, w)
	}
	w.state = stateClosed
	w.pending = nil
	close(w.ch)
}

// unsafeDemote moves a synced watcher to unsynced, needing next onwards.
func (h *hub) unsafeDemote(w *Watcher, next int64) {
	h.unsafeRemoveSynced(w)
	w.next = next
	h.unsafeAddUnsynced(w)
}

func (h *hub) unsafeRemoveSynced(w *Watcher) {
	h.nsynced.Add(-1)
	if len(w.keys.end) == 0 {
		set := h.keyW[string(w.keys.key)]
		delete(set, w)
		if len(set) == 0 {
			delete(h.keyW, string(w.keys.key))
		}
		return
	}
	delete(h.rangeW, w)
}

// notify hands revision rev, whose changes are the log entries from index
// start on, to the synced watchers. The caller holds the store lock
// exclusively.
func (h *hub) notify(rev int64, start int) {
	if h.nsynced.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	log := &h.s.log
	touched := h.touched[:0]
	for i, n := start, log.len(); i < n; i++ {
		e := log.at(i)
		for w := range h.keyW[string(e.kv.Key)] {
			touched = w.collect(e, rev, touched)
		}
		for w := range h.rangeW {
			if w.keys.contains(e.kv.Key) {
				touched = w.collect(e, rev, touched)
			}
		}
	}
	for _, w := range touched {
		evs := w.pending
		w.pending = nil
		select {
		case w.ch <- WatchResponse{Events: evs, Revision: rev}:
			w.next = rev + 1
		default:
			h.unsafeDemote(w, rev)
		}
	}
	clear(touched)
	h.touched = touched[:0]
}

// collect adds one change to w's pending events if w wants it, and adds w to
// touched on its first pending event.
func (w *Watcher) collect(e logEnt, rev int64, touched []*Watcher) []*Watcher {
	if rev < w.next || !w.wants(e.kv) {
		return touched
	}
	if len(w.pending) == 0 {
		touched = append(touched, w)
	}
	w.pending = append(w.pending, w.event(e))
	return touched
}

// unsafeResetAll sends every synced watcher back to catch-up, needing the
// revisions after oldRev: used when Restore replaces the history under them.
func (h *hub) unsafeResetAll(oldRev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var all []*Watcher
	for _, set := range h.keyW {
		for w := range set {
			all = append(all, w)
		}
	}
	for w := range h.rangeW {
		all = append(all, w)
	}
	for _, w := range all {
		h.unsafeDemote(w, max(w.next, oldRev+1))
	}
}
