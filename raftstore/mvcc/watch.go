package mvcc

import (
	"bytes"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// watchChanCap is how many responses a watcher buffers before the apply
// goroutine stops sending to it and leaves it to the catch-up goroutine.
const watchChanCap = 128

// WatchRequest describes what a watcher wants to see.
type WatchRequest struct {
	// Key and End select the keys: End nil means Key alone; End "\x00"
	// means every key >= Key (etcd's convention); otherwise [Key, End).
	// An empty Key means "\x00", the smallest key, as in etcd.
	Key, End []byte
	// StartRev is the first revision to deliver: 0 means the next one;
	// a past revision replays history from it (inclusive); a future one
	// waits for it.
	StartRev int64
	// PrevKV fills Event.PrevKv with the key's value before the change.
	PrevKV bool
	// NoPut and NoDelete drop those events; the watcher still progresses.
	NoPut, NoDelete bool
}

// WatchResponse is a batch of events; all events of one main revision are
// always in the same batch, batches are in revision order.
type WatchResponse struct {
	Events []*mvccpb.Event
	// Revision is the store revision this batch brings the watcher up to
	// (>= the last event's mod revision).
	Revision int64
	// CompactRevision, when non-zero, means the watcher was canceled because
	// the revision it needed next was compacted; Events is empty and the
	// channel is closed after this response.
	CompactRevision int64
}

// Watcher streams the changes of a key range. Its methods are safe to call
// from any goroutine.
type Watcher struct {
	hub      *hub
	keys     keyRange
	prevKV   bool
	noPut    bool
	noDelete bool
	ch       chan WatchResponse

	// Guarded by hub.mu.
	state watcherState
	// next is the first revision not yet handed to ch. While synced it may
	// lag: a synced watcher has everything up to the store revision.
	next int64
	// pending collects a revision's events during a live dispatch.
	pending []*mvccpb.Event
}

type watcherState int

const (
	stateSynced watcherState = iota
	stateUnsynced
	stateClosed
)

// Watch starts a watcher. A StartRev that has been compacted is answered
// with a CompactRevision response on the channel, not with an error.
func (s *Store) Watch(req WatchRequest) (*Watcher, error) {
	key := bytes.Clone(req.Key)
	if len(key) == 0 {
		key = []byte{0}
	}
	w := &Watcher{
		hub:      s.hub,
		keys:     keyRange{key: key, end: bytes.Clone(req.End)},
		prevKV:   req.PrevKV,
		noPut:    req.NoPut,
		noDelete: req.NoDelete,
		ch:       make(chan WatchResponse, watchChanCap),
	}
	// The read lock keeps the revision still while the watcher joins.
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.hub.add(w, req.StartRev, s.rev.Load())
	return w, nil
}

// Chan returns the stream of responses. It is closed after Close or after a
// CompactRevision response.
func (w *Watcher) Chan() <-chan WatchResponse { return w.ch }

// Close stops the watcher and closes its channel. It may be called more
// than once.
func (w *Watcher) Close() {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsafeRemove(w)
}

// Synced reports whether the watcher has handed out everything up to the
// store's current revision: it is in the synced group and its channel is
// empty. rev is that revision, which a progress notification may then
// announce without overtaking an event. When not ok, rev is the last
// revision already put on the channel.
func (w *Watcher) Synced() (rev int64, ok bool) {
	h := w.hub
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.s.rev.Load()
	switch w.state {
	case stateSynced:
		if len(w.ch) == 0 {
			return cur, true
		}
		return cur, false
	case stateUnsynced:
		return w.next - 1, false
	}
	return 0, false
}

// wants reports whether the watcher takes an event of the given kind.
func (w *Watcher) wants(kv *mvccpb.KeyValue) bool {
	if kv.CreateRevision == 0 {
		return !w.noDelete
	}
	return !w.noPut
}

// event builds the watcher's view of one change.
func (w *Watcher) event(e logEnt) *mvccpb.Event {
	ev := &mvccpb.Event{Kv: e.kv}
	if e.kv.CreateRevision == 0 {
		ev.Type = mvccpb.Event_DELETE
	}
	if w.prevKV {
		ev.PrevKv = e.prev
	}
	return ev
}
