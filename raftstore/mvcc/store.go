package mvcc

import (
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// recOverhead approximates the bytes one kept record costs beyond its key
// and value (message, index and log entries), for Size.
const recOverhead = 64

// Store is the MVCC key-value state plus the lease table. The package doc
// says which goroutines may call what, and who owns the bytes.
type Store struct {
	// mu guards the index, the log and the leases: writers hold it
	// exclusively, readers shared. The counters below are atomics as well,
	// so that Rev, Size and friends never wait for a long read or write.
	mu     sync.RWMutex
	index  *btree.BTreeG[*keyHist]
	log    revLog
	leases map[int64]*lease
	// gen is bumped by every Snapshot; keyHists of an older gen are shared.
	gen uint64
	// probe is the writer's lookup key, kept here so lookups do not allocate.
	probe keyHist

	rev        atomic.Int64
	compactRev atomic.Int64
	size       atomic.Int64
	keyCount   atomic.Int64

	hub *hub
}

// New returns an empty store at revision 1, like a fresh etcd.
func New() *Store {
	s := &Store{index: newIndex(), leases: map[int64]*lease{}}
	s.rev.Store(1)
	s.hub = newHub(s)
	return s
}

// Rev returns the current revision.
func (s *Store) Rev() int64 { return s.rev.Load() }

// CompactRev returns the last compacted revision, 0 if none.
func (s *Store) CompactRev() int64 { return s.compactRev.Load() }

// Size returns the approximate bytes held: key and value of every kept
// revision plus a fixed overhead each. It is deterministic, so replicas
// agree on quota alarms.
func (s *Store) Size() int64 { return s.size.Load() }

// KeyCount returns the number of live keys at the current revision.
func (s *Store) KeyCount() int64 { return s.keyCount.Load() }

// header builds a response header; the caller fills in the cluster fields.
func header(rev int64) *etcdserverpb.ResponseHeader {
	return &etcdserverpb.ResponseHeader{Revision: rev}
}

// unsafeLookup finds a key's history using the writer's probe, so it must
// be called with mu held exclusively.
func (s *Store) unsafeLookup(key []byte) *keyHist {
	s.probe.key = key
	h, _ := s.index.Get(&s.probe)
	s.probe.key = nil
	return h
}

// unsafeWritable returns a keyHist the writer may change: h itself, or a
// private copy swapped into the index when h may be shared with a Snapshot.
func (s *Store) unsafeWritable(h *keyHist) *keyHist {
	if h.gen == s.gen {
		return h
	}
	// The capacity limit makes the next append copy the records, so the
	// snapshot's array is never written; every caller appends right away,
	// so a writable keyHist always owns its array.
	c := &keyHist{key: h.key, revs: h.revs[:len(h.revs):len(h.revs)], gen: s.gen}
	s.index.ReplaceOrInsert(c)
	return c
}

// unsafeResolveRev turns a requested revision (0 or less: current) into the
// revision to read at, against current revision cur.
func (s *Store) unsafeResolveRev(rev, cur int64) (int64, error) {
	if rev > cur {
		return 0, ErrFutureRev
	}
	if rev <= 0 {
		rev = cur
	}
	if rev < s.compactRev.Load() {
		return 0, ErrCompacted
	}
	return rev, nil
}

func recSize(key, value []byte) int64 { return int64(len(key)+len(value)) + recOverhead }
