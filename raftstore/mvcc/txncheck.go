package mvcc

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// checkTxnShape rejects, before the store is touched, a txn with a missing
// key anywhere or with a branch that writes one key twice.
func checkTxnShape(req *etcdserverpb.TxnRequest) error {
	if err := checkTxnKeys(req); err != nil {
		return err
	}
	if _, _, err := checkIntervals(req.GetSuccess()); err != nil {
		return err
	}
	_, _, err := checkIntervals(req.GetFailure())
	return err
}

// checkTxnKeys requires a key on every compare and operation, recursively.
func checkTxnKeys(req *etcdserverpb.TxnRequest) error {
	for _, c := range req.GetCompare() {
		if len(c.GetKey()) == 0 {
			return ErrEmptyKey
		}
	}
	for _, ops := range [][]*etcdserverpb.RequestOp{req.GetSuccess(), req.GetFailure()} {
		for _, op := range ops {
			var key []byte
			switch r := op.GetRequest().(type) {
			case *etcdserverpb.RequestOp_RequestRange:
				key = r.RequestRange.GetKey()
			case *etcdserverpb.RequestOp_RequestPut:
				key = r.RequestPut.GetKey()
			case *etcdserverpb.RequestOp_RequestDeleteRange:
				key = r.RequestDeleteRange.GetKey()
			case *etcdserverpb.RequestOp_RequestTxn:
				if err := checkTxnKeys(r.RequestTxn); err != nil {
					return err
				}
				continue
			default:
				continue
			}
			if len(key) == 0 {
				return ErrEmptyKey
			}
		}
	}
	return nil
}

// checkIntervals follows etcd's rule for one branch: no key may be put twice,
// nor put and deleted, counting the branches of nested txns (a key put in
// both the then and the else branch of one nested txn is fine: only one
// runs). Deleting a key twice is allowed; the second delete finds nothing.
// It returns the keys put and the ranges deleted by ops, for the level above.
// Unlike etcd, a delete with range end "\x00" counts as reaching every key
// after its start, so it conflicts with a put of any of them.
func checkIntervals(ops []*etcdserverpb.RequestOp) (map[string]struct{}, []keyRange, error) {
	var dels []keyRange
	for _, op := range ops {
		if d := op.GetRequestDeleteRange(); d != nil {
			dels = append(dels, keyRange{key: d.Key, end: d.RangeEnd})
		}
	}
	puts := map[string]struct{}{}
	for _, op := range ops {
		t := op.GetRequestTxn()
		if t == nil {
			continue
		}
		putsThen, delsThen, err := checkIntervals(t.GetSuccess())
		if err != nil {
			return nil, nil, err
		}
		putsElse, delsElse, err := checkIntervals(t.GetFailure())
		if err != nil {
			return nil, nil, err
		}
		for k := range putsThen {
			if _, dup := puts[k]; dup || deletes(dels, k) {
				return nil, nil, ErrDuplicateKey
			}
			puts[k] = struct{}{}
		}
		for k := range putsElse {
			_, dup := puts[k]
			_, inThen := putsThen[k]
			if (dup && !inThen) || deletes(dels, k) {
				return nil, nil, ErrDuplicateKey
			}
			puts[k] = struct{}{}
		}
		dels = append(dels, delsThen...)
		dels = append(dels, delsElse...)
	}
	for _, op := range ops {
		p := op.GetRequestPut()
		if p == nil {
			continue
		}
		k := string(p.Key)
		if _, dup := puts[k]; dup || deletes(dels, k) {
			return nil, nil, ErrDuplicateKey
		}
		puts[k] = struct{}{}
	}
	return puts, dels, nil
}

// deletes reports whether any of the ranges covers key k.
func deletes(dels []keyRange, k string) bool {
	for _, d := range dels {
		if d.contains([]byte(k)) {
			return true
		}
	}
	return false
}
