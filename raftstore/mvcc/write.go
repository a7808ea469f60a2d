package mvcc

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// writeTxn applies the changes of one main revision. Every change gets the
// next sub revision; nothing is visible to readers until end, because the
// writer holds the store lock throughout.
type writeTxn struct {
	s        *Store
	begin    int64 // store revision before the txn
	main     int64 // revision the changes are written at
	sub      int64 // changes so far
	logStart int   // log length before the txn, for watch dispatch
}

// unsafeBeginWrite starts a write; the caller holds mu exclusively.
func (s *Store) unsafeBeginWrite() *writeTxn {
	rev := s.rev.Load()
	return &writeTxn{s: s, begin: rev, main: rev + 1, logStart: s.log.len()}
}

// viewRev is the revision a read inside the txn sees: the txn's own
// revision once it has changed something.
func (w *writeTxn) viewRev() int64 {
	if w.sub > 0 {
		return w.main
	}
	return w.begin
}

// end publishes the txn's revision, if it changed anything, and hands its
// changes to the watchers. It returns the store revision.
func (w *writeTxn) end() int64 {
	if w.sub == 0 {
		return w.begin
	}
	w.s.rev.Store(w.main)
	w.s.hub.notify(w.main, w.logStart)
	return w.main
}

// put writes key and returns the key's previous live value, nil if none.
// The caller has validated the lease and, for ignoreValue or ignoreLease,
// that the key exists.
func (w *writeTxn) put(key, value []byte, leaseID int64, ignoreValue, ignoreLease bool) *mvccpb.KeyValue {
	s := w.s
	h := s.unsafeLookup(key)
	var prev *mvccpb.KeyValue
	if h != nil {
		prev = h.latest()
	}
	if prev != nil {
		if ignoreValue {
			value = prev.Value
		}
		if ignoreLease {
			leaseID = prev.Lease
		}
	}
	kv := &mvccpb.KeyValue{Key: key, Value: value, ModRevision: w.main, Lease: leaseID}
	if prev != nil {
		kv.CreateRevision = prev.CreateRevision
		kv.Version = prev.Version + 1
	} else {
		kv.CreateRevision = w.main
		kv.Version = 1
		s.keyCount.Add(1)
	}
	if h == nil {
		h = &keyHist{key: key, gen: s.gen}
		s.index.ReplaceOrInsert(h)
	} else {
		h = s.unsafeWritable(h)
		kv.Key = h.key // every record of a key shares one key slice
	}
	w.record(h, kv, prev)
	var oldLease int64
	if prev != nil {
		oldLease = prev.Lease
	}
	if oldLease != leaseID {
		s.unsafeDetach(oldLease, h.key)
		s.unsafeAttach(leaseID, h.key)
	}
	return prev
}

// del writes a tombstone for h's key if it is live, returning the deleted
// value (nil if the key was already absent).
func (w *writeTxn) del(h *keyHist) *mvccpb.KeyValue {
	prev := h.latest()
	if prev == nil {
		return nil
	}
	s := w.s
	h = s.unsafeWritable(h)
	w.record(h, &mvccpb.KeyValue{Key: h.key, ModRevision: w.main}, prev)
	s.keyCount.Add(-1)
	s.unsafeDetach(prev.Lease, h.key)
	return prev
}

// deleteRange deletes every live key in r and returns the deleted values in
// key order.
func (w *writeTxn) deleteRange(r keyRange) []*mvccpb.KeyValue {
	if len(r.end) == 0 {
		h := w.s.unsafeLookup(r.key)
		if h == nil {
			return nil
		}
		if prev := w.del(h); prev != nil {
			return []*mvccpb.KeyValue{prev}
		}
		return nil
	}
	// Collect first: the index must not change while it is being walked.
	var live []*keyHist
	ascend(w.s.index, r, func(h *keyHist) bool {
		if h.latest() != nil {
			live = append(live, h)
		}
		return true
	})
	prevs := make([]*mvccpb.KeyValue, 0, len(live))
	for _, h := range live {
		prevs = append(prevs, w.del(h))
	}
	return prevs
}

// record appends a change to the key's history and to the log.
func (w *writeTxn) record(h *keyHist, kv, prev *mvccpb.KeyValue) {
	h.revs = append(h.revs, rec{kv: kv, sub: w.sub})
	w.s.log.append(logEnt{kv: kv, prev: prev})
	w.s.size.Add(recSize(kv.Key, kv.Value))
	w.sub++
}
