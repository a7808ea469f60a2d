package mvcc

import (
	"bytes"
	"cmp"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Txn runs a transaction: compares, then the success or failure operations,
// recursively for nested txns. As in etcd every compare, nested ones too, is
// evaluated against the state before the txn, and every operation on the
// chosen path is validated before the first one runs, so an error leaves
// the store untouched. All writes share one new main revision; a txn that
// writes nothing creates none. Reads inside the txn see its earlier writes.
// A branch that would write one key twice is rejected with ErrDuplicateKey.
func (s *Store) Txn(req *etcdserverpb.TxnRequest) (*etcdserverpb.TxnResponse, error) {
	if err := checkTxnShape(req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	begin := s.rev.Load()
	path := &txnPath{taken: s.unsafeTxnPath(req, begin, nil)}
	if err := s.unsafeCheckTxnOps(req, path, begin); err != nil {
		return nil, err
	}
	path.next = 0
	w := s.unsafeBeginWrite()
	resp := w.txn(req, path)
	resp.Header.Revision = w.end()
	return resp, nil
}

// txnPath is the outcome of every txn's compares on the chosen path, in
// depth-first order, so checks and execution follow the same branches.
type txnPath struct {
	taken []bool
	next  int
}

func (p *txnPath) pop() bool {
	ok := p.taken[p.next]
	p.next++
	return ok
}

func branch(req *etcdserverpb.TxnRequest, ok bool) []*etcdserverpb.RequestOp {
	if ok {
		return req.GetSuccess()
	}
	return req.GetFailure()
}

// unsafeTxnPath evaluates the compares of req and of the nested txns on the
// branch it takes, at revision rev.
func (s *Store) unsafeTxnPath(req *etcdserverpb.TxnRequest, rev int64, path []bool) []bool {
	ok := true
	for _, c := range req.GetCompare() {
		if !s.unsafeCompare(c, rev) {
			ok = false
			break
		}
	}
	path = append(path, ok)
	for _, op := range branch(req, ok) {
		if t, isTxn := op.GetRequest().(*etcdserverpb.RequestOp_RequestTxn); isTxn {
			path = s.unsafeTxnPath(t.RequestTxn, rev, path)
		}
	}
	return path
}

// unsafeCompare evaluates one compare: every key in its range must satisfy
// it. With no key present, a value compare fails and the others compare
// against zero, as etcd does.
func (s *Store) unsafeCompare(c *etcdserverpb.Compare, rev int64) bool {
	found, ok := false, true
	ascend(s.index, keyRange{key: c.Key, end: c.RangeEnd}, func(h *keyHist) bool {
		kv := h.liveAt(rev)
		if kv == nil {
			return true
		}
		found = true
		ok = compareKV(c, kv)
		return ok
	})
	if found {
		return ok
	}
	if c.Target == etcdserverpb.Compare_VALUE {
		return false
	}
	return compareKV(c, &mvccpb.KeyValue{})
}

func compareKV(c *etcdserverpb.Compare, kv *mvccpb.KeyValue) bool {
	var r int
	switch c.Target {
	case etcdserverpb.Compare_VALUE:
		v := c.GetValue()
		if v == nil {
			v = []byte{}
		}
		r = bytes.Compare(kv.Value, v)
	case etcdserverpb.Compare_CREATE:
		r = cmp.Compare(kv.CreateRevision, c.GetCreateRevision())
	case etcdserverpb.Compare_MOD:
		r = cmp.Compare(kv.ModRevision, c.GetModRevision())
	case etcdserverpb.Compare_VERSION:
		r = cmp.Compare(kv.Version, c.GetVersion())
	case etcdserverpb.Compare_LEASE:
		r = cmp.Compare(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case etcdserverpb.Compare_EQUAL:
		return r == 0
	case etcdserverpb.Compare_NOT_EQUAL:
		return r != 0
	case etcdserverpb.Compare_GREATER:
		return r > 0
	case etcdserverpb.Compare_LESS:
		return r < 0
	}
	return true
}

// unsafeCheckTxnOps validates the operations on the chosen path against the
// state before the txn: leases and ignore_* keys for puts, revisions for
// ranges.
func (s *Store) unsafeCheckTxnOps(req *etcdserverpb.TxnRequest, path *txnPath, begin int64) error {
	for _, op := range branch(req, path.pop()) {
		switch r := op.GetRequest().(type) {
		case *etcdserverpb.RequestOp_RequestPut:
			if err := s.unsafeCheckPut(r.RequestPut); err != nil {
				return err
			}
		case *etcdserverpb.RequestOp_RequestRange:
			if rev := r.RequestRange.Revision; rev > 0 {
				if _, err := s.unsafeResolveRev(rev, begin); err != nil {
					return err
				}
			}
		case *etcdserverpb.RequestOp_RequestTxn:
			if err := s.unsafeCheckTxnOps(r.RequestTxn, path, begin); err != nil {
				return err
			}
		}
	}
	return nil
}

// txn runs the operations on the chosen path. It cannot fail: everything
// was validated. Sub-response headers carry the revision the txn's view had
// after each operation, like etcd's.
func (w *writeTxn) txn(req *etcdserverpb.TxnRequest, path *txnPath) *etcdserverpb.TxnResponse {
	ok := path.pop()
	ops := branch(req, ok)
	resp := &etcdserverpb.TxnResponse{Header: header(0), Succeeded: ok, Responses: make([]*etcdserverpb.ResponseOp, len(ops))}
	for i, op := range ops {
		out := &etcdserverpb.ResponseOp{}
		switch r := op.GetRequest().(type) {
		case *etcdserverpb.RequestOp_RequestRange:
			out.Response = &etcdserverpb.ResponseOp_ResponseRange{ResponseRange: w.rangeResp(r.RequestRange)}
		case *etcdserverpb.RequestOp_RequestPut:
			p := r.RequestPut
			prev := w.put(p.Key, p.Value, p.Lease, p.IgnoreValue, p.IgnoreLease)
			pr := &etcdserverpb.PutResponse{Header: header(w.main)}
			if p.PrevKv {
				pr.PrevKv = prev
			}
			out.Response = &etcdserverpb.ResponseOp_ResponsePut{ResponsePut: pr}
		case *etcdserverpb.RequestOp_RequestDeleteRange:
			out.Response = &etcdserverpb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: w.deleteRangeResp(r.RequestDeleteRange)}
		case *etcdserverpb.RequestOp_RequestTxn:
			sub := w.txn(r.RequestTxn, path)
			sub.Header.Revision = w.viewRev()
			out.Response = &etcdserverpb.ResponseOp_ResponseTxn{ResponseTxn: sub}
		}
		resp.Responses[i] = out
	}
	return resp
}

// rangeResp runs a range inside the txn, seeing the txn's earlier writes.
func (w *writeTxn) rangeResp(req *etcdserverpb.RangeRequest) *etcdserverpb.RangeResponse {
	rev := req.Revision
	if rev <= 0 {
		rev = w.viewRev()
	}
	q := newRangeQuery(req)
	q.scan(w.s.index, req.Key, rev, 0)
	return q.response(w.viewRev())
}
