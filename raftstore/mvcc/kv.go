package mvcc

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Put writes one key in a new revision.
func (s *Store) Put(req *etcdserverpb.PutRequest) (*etcdserverpb.PutResponse, error) {
	if len(req.Key) == 0 {
		return nil, ErrEmptyKey
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.unsafeCheckPut(req); err != nil {
		return nil, err
	}
	w := s.unsafeBeginWrite()
	prev := w.put(req.Key, req.Value, req.Lease, req.IgnoreValue, req.IgnoreLease)
	resp := &etcdserverpb.PutResponse{Header: header(w.end())}
	if req.PrevKv {
		resp.PrevKv = prev
	}
	return resp, nil
}

// unsafeCheckPut validates a put against the current state, as etcd does
// before applying anything: the lease must exist, and ignore_value or
// ignore_lease need a live key to take the value or lease from.
func (s *Store) unsafeCheckPut(req *etcdserverpb.PutRequest) error {
	if req.IgnoreValue || req.IgnoreLease {
		h := s.unsafeLookup(req.Key)
		if h == nil || h.latest() == nil {
			return ErrKeyNotFound
		}
	}
	if req.Lease != 0 && !req.IgnoreLease {
		if _, ok := s.leases[req.Lease]; !ok {
			return ErrLeaseNotFound
		}
	}
	return nil
}

// DeleteRange deletes a key or a range of keys in one revision; deleting
// nothing creates no revision.
func (s *Store) DeleteRange(req *etcdserverpb.DeleteRangeRequest) (*etcdserverpb.DeleteRangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, ErrEmptyKey
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.unsafeBeginWrite()
	resp := w.deleteRangeResp(req)
	resp.Header.Revision = w.end()
	return resp, nil
}

// deleteRangeResp runs a delete inside w and builds etcd's response; the
// header revision is the txn's view after the delete.
func (w *writeTxn) deleteRangeResp(req *etcdserverpb.DeleteRangeRequest) *etcdserverpb.DeleteRangeResponse {
	prevs := w.deleteRange(keyRange{key: req.Key, end: req.RangeEnd})
	resp := &etcdserverpb.DeleteRangeResponse{Header: header(w.viewRev()), Deleted: int64(len(prevs))}
	if req.PrevKv {
		resp.PrevKvs = prevs
	}
	return resp
}
