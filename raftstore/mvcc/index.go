package mvcc

import (
	"bytes"
	"sort"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// keyHist is the revision index entry of one key: every kept change of the
// key, oldest first, each holding the full KeyValue as written. A delete is a
// tombstone: a KeyValue with only Key and ModRevision set (CreateRevision 0
// marks it, since a live key is always created at revision 2 or later).
//
// A worked example. Key "foo" is put at revisions 2 and 3, deleted at 5, put
// again at 7, and put inside a txn as its second operation at 8:
//
//	revs:    {2.0 put} {3.0 put} {5.0 tomb} {7.0 put} {8.1 put}
//	create:      2         2                    7         7
//	version:     1         2                    1         2
//
// The runs of puts between tombstones are etcd's "generations": a delete
// ends one, the next put starts another with a fresh create_revision and
// version 1.
//
// Reading at revision r takes the newest record with Main <= r; a tombstone
// or no record at all means the key is absent at r:
//
//	r=1 absent, r=2 {2.0}, r=4 {3.0}, r=5 and r=6 absent, r=7 {7.0}, r=9 {8.1}
//
// Compact(r) keeps the newest record with Main <= r and everything after it,
// so reads at any revision >= r answer as before; the kept record is dropped
// too when it is a tombstone older than r, because it and "no record" read
// the same. A tombstone exactly at r stays, so that a watcher replaying from
// r still sees that delete; the next compaction drops it:
//
//	Compact(4): {3.0} {5.0} {7.0} {8.1}
//	Compact(5): {5.0} {7.0} {8.1}
//	Compact(6): {7.0} {8.1}
//	Compact(9): {8.1}
//
// A key whose records all go leaves the index. One key changes at most once
// per main revision (txn validation rejects two writes to one key), so Main
// alone orders a key's records.
//
// Copy-on-write: a keyHist whose gen is older than the store's gen may be
// shared with a Snapshot, so the writer replaces it with a copy instead of
// changing it (see Store.writable). Snapshots therefore never see a change.
type keyHist struct {
	key  []byte
	revs []rec
	gen  uint64
}

// rec is one change of a key.
type rec struct {
	kv  *mvccpb.KeyValue
	sub int64
}

func (r rec) tombstone() bool { return r.kv.CreateRevision == 0 }

func (r rec) rev() Revision { return Revision{Main: r.kv.ModRevision, Sub: r.sub} }

// indexAt returns the index of the newest record with Main <= rev, or -1.
func (h *keyHist) indexAt(rev int64) int {
	n := len(h.revs)
	if n == 0 {
		return -1
	}
	// Most reads are at the current revision: skip the search.
	if h.revs[n-1].kv.ModRevision <= rev {
		return n - 1
	}
	return sort.Search(n, func(i int) bool { return h.revs[i].kv.ModRevision > rev }) - 1
}

// liveAt returns the key's value at rev, or nil when it is absent then.
func (h *keyHist) liveAt(rev int64) *mvccpb.KeyValue {
	i := h.indexAt(rev)
	if i < 0 || h.revs[i].tombstone() {
		return nil
	}
	return h.revs[i].kv
}

// latest returns the key's newest value, or nil when it is deleted.
func (h *keyHist) latest() *mvccpb.KeyValue {
	if n := len(h.revs); n > 0 && !h.revs[n-1].tombstone() {
		return h.revs[n-1].kv
	}
	return nil
}

func lessHist(a, b *keyHist) bool { return bytes.Compare(a.key, b.key) < 0 }

// btreeDegree trades node copy cost on copy-on-write against tree depth.
const btreeDegree = 32

func newIndex() *btree.BTreeG[*keyHist] { return btree.NewG(btreeDegree, lessHist) }

// keyRange is a key interval in etcd's request convention.
type keyRange struct {
	key, end []byte
}

// isFromKey reports whether end is etcd's "\x00": every key >= key.
func isFromKey(end []byte) bool { return len(end) == 1 && end[0] == 0 }

// contains reports whether k falls in the range.
func (r keyRange) contains(k []byte) bool {
	if len(r.end) == 0 {
		return bytes.Equal(k, r.key)
	}
	if bytes.Compare(k, r.key) < 0 {
		return false
	}
	return isFromKey(r.end) || bytes.Compare(k, r.end) < 0
}

// ascend calls fn for every indexed key in r, in key order, until fn returns
// false. The caller holds the store lock; fn must not change the index.
func ascend(t *btree.BTreeG[*keyHist], r keyRange, fn func(*keyHist) bool) {
	lo := &keyHist{key: r.key}
	switch {
	case len(r.end) == 0:
		if h, ok := t.Get(lo); ok {
			fn(h)
		}
	case isFromKey(r.end):
		t.AscendGreaterOrEqual(lo, fn)
	case bytes.Compare(r.key, r.end) < 0:
		t.AscendRange(lo, &keyHist{key: r.end}, fn)
	}
}
