package mvcc

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// rangeChunk bounds how many keys Range reads per hold of the read lock, so
// that listing a large prefix does not stall the apply goroutine.
const rangeChunk = 1024

// Range reads a key or a range of keys at the current or an older revision.
// Count is the number of keys in the range at that revision, before limit
// and the revision filters; Header.Revision is the current revision.
func (s *Store) Range(req *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, ErrEmptyKey
	}
	q := newRangeQuery(req)
	s.mu.RLock()
	cur := s.rev.Load()
	rev, err := s.unsafeResolveRev(req.Revision, cur)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	next := q.scan(s.index, req.Key, rev, rangeChunk)
	s.mu.RUnlock()
	for next != nil {
		// A read at a fixed revision stays valid across writes, as long as
		// compaction has not passed that revision in between.
		s.mu.RLock()
		if _, err := s.unsafeResolveRev(rev, s.rev.Load()); err != nil {
			s.mu.RUnlock()
			return nil, err
		}
		next = q.scan(s.index, next, rev, rangeChunk)
		s.mu.RUnlock()
	}
	return q.response(cur), nil
}

// rangeQuery accumulates one Range request's result across scans.
type rangeQuery struct {
	req   *etcdserverpb.RangeRequest
	keep  int // how many values to collect; -1: all
	count int64
	kvs   []*mvccpb.KeyValue
}

func newRangeQuery(req *etcdserverpb.RangeRequest) *rangeQuery {
	q := &rangeQuery{req: req, keep: -1}
	switch {
	case req.CountOnly:
		q.keep = 0
	case effectiveOrder(req.SortOrder, req.SortTarget) != etcdserverpb.RangeRequest_NONE,
		req.MinModRevision != 0, req.MaxModRevision != 0,
		req.MinCreateRevision != 0, req.MaxCreateRevision != 0:
		// Sorting and filtering need every value; the limit applies after.
	case req.Limit > 0:
		q.keep = int(req.Limit) + 1 // one more tells whether there are more
	}
	return q
}

// effectiveOrder is the sort etcd really does: a non-key target with no
// order means ascending, and ascending by key is the index order already.
func effectiveOrder(order etcdserverpb.RangeRequest_SortOrder, target etcdserverpb.RangeRequest_SortTarget) etcdserverpb.RangeRequest_SortOrder {
	switch {
	case order == etcdserverpb.RangeRequest_NONE && target != etcdserverpb.RangeRequest_KEY:
		return etcdserverpb.RangeRequest_ASCEND
	case order == etcdserverpb.RangeRequest_ASCEND && target == etcdserverpb.RangeRequest_KEY:
		return etcdserverpb.RangeRequest_NONE
	}
	return order
}

// scan reads keys from `from` to the request's range end at rev, at most
// budget of them (0: no limit), and returns the key to resume from, or nil
// when the range is done.
func (q *rangeQuery) scan(t *btree.BTreeG[*keyHist], from []byte, rev int64, budget int) []byte {
	var next []byte
	n := 0
	ascend(t, keyRange{key: from, end: q.req.RangeEnd}, func(h *keyHist) bool {
		if budget > 0 && n == budget {
			next = h.key
			return false
		}
		n++
		kv := h.liveAt(rev)
		if kv == nil {
			return true
		}
		q.count++
		if q.keep < 0 || len(q.kvs) < q.keep {
			q.kvs = append(q.kvs, kv)
		}
		return true
	})
	return next
}

// response applies the filters, sort order, limit and keys_only, in etcd's
// order.
func (q *rangeQuery) response(headerRev int64) *etcdserverpb.RangeResponse {
	req := q.req
	kvs := q.kvs
	if req.MaxModRevision != 0 {
		kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool { return kv.ModRevision > req.MaxModRevision })
	}
	if req.MinModRevision != 0 {
		kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool { return kv.ModRevision < req.MinModRevision })
	}
	if req.MaxCreateRevision != 0 {
		kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool { return kv.CreateRevision > req.MaxCreateRevision })
	}
	if req.MinCreateRevision != 0 {
		kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool { return kv.CreateRevision < req.MinCreateRevision })
	}
	sortKVs(kvs, req.SortOrder, req.SortTarget)
	resp := &etcdserverpb.RangeResponse{Header: header(headerRev), Count: q.count}
	if req.Limit > 0 && len(kvs) > int(req.Limit) {
		kvs = kvs[:req.Limit]
		resp.More = true
	}
	if req.KeysOnly {
		for i, kv := range kvs {
			// A copy: the stored message is shared and must keep its value.
			kvs[i] = &mvccpb.KeyValue{Key: kv.Key, CreateRevision: kv.CreateRevision,
				ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
		}
	}
	resp.Kvs = kvs
	return resp
}

// sortKVs sorts kvs (in key order) as the request asks. The sort is
// stable, so ties stay in key order.
func sortKVs(kvs []*mvccpb.KeyValue, order etcdserverpb.RangeRequest_SortOrder, target etcdserverpb.RangeRequest_SortTarget) {
	order = effectiveOrder(order, target)
	if order == etcdserverpb.RangeRequest_NONE {
		return
	}
	var by func(a, b *mvccpb.KeyValue) int
	switch target {
	case etcdserverpb.RangeRequest_VERSION:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.Version, b.Version) }
	case etcdserverpb.RangeRequest_CREATE:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.CreateRevision, b.CreateRevision) }
	case etcdserverpb.RangeRequest_MOD:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.ModRevision, b.ModRevision) }
	case etcdserverpb.RangeRequest_VALUE:
		by = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Value, b.Value) }
	default:
		by = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) }
	}
	if order == etcdserverpb.RangeRequest_DESCEND {
		asc := by
		by = func(a, b *mvccpb.KeyValue) int { return asc(b, a) }
	}
	slices.SortStableFunc(kvs, by)
}
