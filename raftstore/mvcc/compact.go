package mvcc

import (
	"slices"
	"unsafe"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Compact drops the history below rev now: each key keeps its newest
// revision <= rev and everything after it, except that a tombstone older
// than rev goes too. Reads at revisions >= rev answer as before; reads that
// need older revisions get ErrCompacted, and watchers that still need them
// get a CompactRevision response.
func (s *Store) Compact(rev int64) (*etcdserverpb.CompactionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.compactRev.Load() {
		return nil, ErrCompacted
	}
	cur := s.rev.Load()
	if rev > cur {
		return nil, ErrFutureRev
	}
	// Only keys written since the previous compaction can have anything to
	// drop, and the log holds exactly those writes: walk it rather than
	// every key. Records of one key share their key slice, which makes a
	// cheap "seen" test.
	seen := map[*byte]struct{}{}
	for i, n := 0, s.log.len(); i < n; i++ {
		kv := s.log.at(i).kv
		if kv.ModRevision > rev {
			break
		}
		id := unsafe.SliceData(kv.Key)
		if _, ok := seen[id]; ok {
			continue
		}
		seen[id] = struct{}{}
		if h := s.unsafeLookup(kv.Key); h != nil {
			s.unsafeCompactKey(h, rev)
		}
	}
	s.log.truncateBefore(rev)
	s.compactRev.Store(rev)
	return &etcdserverpb.CompactionResponse{Header: header(cur)}, nil
}

// unsafeCompactKey drops the records of h that no read at >= rev needs.
func (s *Store) unsafeCompactKey(h *keyHist, rev int64) {
	i := h.indexAt(rev)
	if i < 0 {
		return
	}
	keep := i
	if r := h.revs[i]; r.tombstone() && r.kv.ModRevision < rev {
		keep = i + 1
	}
	if keep == 0 {
		return
	}
	for _, r := range h.revs[:keep] {
		s.size.Add(-recSize(r.kv.Key, r.kv.Value))
	}
	if keep == len(h.revs) {
		s.index.Delete(h)
		return
	}
	kept := h.revs[keep:]
	if h.gen == s.gen && cap(h.revs) <= 4*len(kept)+4 {
		// Not shared, and not much larger than needed: shift in place
		// rather than allocate again for the next put.
		n := copy(h.revs, kept)
		clear(h.revs[n:])
		h.revs = h.revs[:n]
		return
	}
	// A fresh array, so that a long dropped history can be freed and a
	// snapshot's array is never written.
	revs := slices.Clone(kept)
	if h.gen != s.gen {
		s.index.ReplaceOrInsert(&keyHist{key: h.key, revs: revs, gen: s.gen})
		return
	}
	h.revs = revs
}
