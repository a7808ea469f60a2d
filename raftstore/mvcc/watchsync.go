package mvcc

import (
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

const (
	// catchUpRetry is how long catch-up waits when no unsynced watcher
	// could take anything (all their channels are full).
	catchUpRetry = 10 * time.Millisecond
	// replayBatch bounds the events of one catch-up response; a revision is
	// never split, so a batch may exceed it by one revision's events.
	replayBatch = 1000
	// replayScan bounds the log entries read for one watcher per pass, so
	// catch-up holds the store's read lock only briefly.
	replayScan = 16384
)

// unsafeStartCatchUp starts the catch-up goroutine unless it runs already.
// It exits by itself once no watcher is unsynced, so an idle store has no
// goroutine to stop.
func (h *hub) unsafeStartCatchUp() {
	if h.running {
		return
	}
	h.running = true
	go h.catchUp()
}

func (h *hub) catchUp() {
	for {
		progressed, done := h.syncPass()
		if done {
			return
		}
		if !progressed {
			time.Sleep(catchUpRetry)
		}
	}
}

// syncPass gives every unsynced watcher whose channel has room its next
// batch: a CompactRevision response if compaction overtook it, else events
// replayed from the log. Watchers that reach the store revision join the
// synced group. It reports whether any watcher moved, and whether none is
// left unsynced (the goroutine then ends).
func (h *hub) syncPass() (progressed, done bool) {
	s := h.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, compact := s.rev.Load(), s.compactRev.Load()
	for w := range h.unsynced {
		// Only the hub sends, under mu, so room now means the send below
		// cannot block.
		if len(w.ch) == cap(w.ch) {
			continue
		}
		progressed = true
		if w.next < compact {
			w.ch <- WatchResponse{CompactRevision: compact}
			h.unsafeRemove(w)
			continue
		}
		if w.next <= cur {
			evs, upto := h.unsafeReplay(w, cur)
			if len(evs) > 0 {
				w.ch <- WatchResponse{Events: evs, Revision: upto}
			}
			w.next = upto + 1
		}
		if w.next > cur {
			delete(h.unsynced, w)
			h.unsafeAddSynced(w)
		}
	}
	if len(h.unsynced) == 0 {
		h.running = false
		return progressed, true
	}
	return progressed, false
}

// unsafeReplay reads w's events from the log, from w.next on, and returns
// them with the last revision they cover. It stops at a revision boundary
// once the batch or the scan is large enough.
func (h *hub) unsafeReplay(w *Watcher, cur int64) ([]*mvccpb.Event, int64) {
	log := &h.s.log
	var evs []*mvccpb.Event
	scanned := 0
	for i, n := log.search(w.next), log.len(); i < n; i++ {
		e := log.at(i)
		main := e.kv.ModRevision
		if (len(evs) >= replayBatch || scanned >= replayScan) && main != log.at(i-1).kv.ModRevision {
			return evs, main - 1
		}
		scanned++
		if w.keys.contains(e.kv.Key) && w.wants(e.kv) {
			evs = append(evs, w.event(e))
		}
	}
	return evs, cur
}
