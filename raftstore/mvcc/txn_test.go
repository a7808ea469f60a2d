package mvcc

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func cmpValue(key string, r pb.Compare_CompareResult, v string) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_VALUE, Result: r, TargetUnion: &pb.Compare_Value{Value: []byte(v)}}
}

func cmpInt(key string, target pb.Compare_CompareTarget, r pb.Compare_CompareResult, n int64) *pb.Compare {
	c := &pb.Compare{Key: []byte(key), Target: target, Result: r}
	switch target {
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: n}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: n}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: n}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: n}
	}
	return c
}

func TestTxnCompareTargetsAndResults(t *testing.T) {
	const (
		eq = pb.Compare_EQUAL
		gt = pb.Compare_GREATER
		lt = pb.Compare_LESS
		ne = pb.Compare_NOT_EQUAL
	)
	tests := []struct {
		name string
		c    *pb.Compare
		want bool
	}{
		{"value equal", cmpValue("k", eq, "m"), true},
		{"value equal other", cmpValue("k", eq, "n"), false},
		{"value greater", cmpValue("k", gt, "l"), true},
		{"value not greater", cmpValue("k", gt, "m"), false},
		{"value less", cmpValue("k", lt, "n"), true},
		{"value not equal", cmpValue("k", ne, "x"), true},
		{"value not not-equal", cmpValue("k", ne, "m"), false},
		{"version equal", cmpInt("k", pb.Compare_VERSION, eq, 2), true},
		{"version greater", cmpInt("k", pb.Compare_VERSION, gt, 1), true},
		{"version less", cmpInt("k", pb.Compare_VERSION, lt, 3), true},
		{"version not less", cmpInt("k", pb.Compare_VERSION, lt, 2), false},
		{"version not-equal", cmpInt("k", pb.Compare_VERSION, ne, 2), false},
		{"create equal", cmpInt("k", pb.Compare_CREATE, eq, 2), true},
		{"create not greater", cmpInt("k", pb.Compare_CREATE, gt, 2), false},
		{"create less", cmpInt("k", pb.Compare_CREATE, lt, 3), true},
		{"create not-equal", cmpInt("k", pb.Compare_CREATE, ne, 5), true},
		{"mod equal", cmpInt("k", pb.Compare_MOD, eq, 3), true},
		{"mod greater", cmpInt("k", pb.Compare_MOD, gt, 2), true},
		{"mod not less", cmpInt("k", pb.Compare_MOD, lt, 3), false},
		{"mod not-equal", cmpInt("k", pb.Compare_MOD, ne, 3), false},
		{"lease equal", cmpInt("k", pb.Compare_LEASE, eq, 5), true},
		{"lease not-equal none", cmpInt("k", pb.Compare_LEASE, ne, 0), true},
		{"lease greater", cmpInt("k", pb.Compare_LEASE, gt, 4), true},
		{"lease not less", cmpInt("k", pb.Compare_LEASE, lt, 5), false},
		{"missing key value always fails", cmpValue("nope", eq, ""), false},
		{"missing key value not-equal fails too", cmpValue("nope", ne, "x"), false},
		{"missing key version is 0", cmpInt("nope", pb.Compare_VERSION, eq, 0), true},
		{"missing key create is 0", cmpInt("nope", pb.Compare_CREATE, eq, 0), true},
		{"missing key mod is 0", cmpInt("nope", pb.Compare_MOD, lt, 1), true},
		{"missing key lease is 0", cmpInt("nope", pb.Compare_LEASE, eq, 0), true},
		{"range all match", withEnd(cmpValue("r1", gt, ""), "r3"), true},
		{"range one fails", withEnd(cmpValue("r1", eq, "a"), "r3"), false},
		{"range versions", withEnd(cmpInt("r1", pb.Compare_VERSION, eq, 1), "r3"), true},
		{"range from key", withEnd(cmpInt("r", pb.Compare_CREATE, gt, 1), "\x00"), true},
		{"empty range like missing key", withEnd(cmpInt("x1", pb.Compare_VERSION, eq, 0), "x9"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			mustGrant(t, s, 5)
			putLease(t, s, "k", "m", 5) // 2
			putLease(t, s, "k", "m", 5) // 3: c2 m3 v2 l5
			put(t, s, "r1", "a")
			put(t, s, "r2", "b")
			resp, err := s.Txn(&pb.TxnRequest{
				Compare: []*pb.Compare{tt.c},
				Success: []*pb.RequestOp{opPut("result", "success")},
				Failure: []*pb.RequestOp{opPut("result", "failure")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Succeeded != tt.want {
				t.Fatalf("succeeded %v, want %v", resp.Succeeded, tt.want)
			}
			want := map[bool]string{true: "success", false: "failure"}[tt.want]
			if got := string(get(t, s, "result", 0).Value); got != want {
				t.Fatalf("ran %s branch", got)
			}
		})
	}
}

func withEnd(c *pb.Compare, end string) *pb.Compare {
	c.RangeEnd = []byte(end)
	return c
}

func TestTxnWritesShareOneRevision(t *testing.T) {
	s := New()
	put(t, s, "k", "old") // 2
	resp, err := s.Txn(&pb.TxnRequest{
		Success: []*pb.RequestOp{
			opRange("x", "z"),
			opPut("x", "1"),
			opPut("y", "2"),
			opRange("x", "z"),
			opDel("k", ""),
			opDel("nope", ""),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Succeeded || resp.Header.Revision != 3 || s.Rev() != 3 {
		t.Fatalf("succeeded %v at %d, store %d", resp.Succeeded, resp.Header.Revision, s.Rev())
	}
	r := resp.Responses
	if got := keysOf(r[0].GetResponseRange().Kvs); got != "" || r[0].GetResponseRange().Header.Revision != 2 {
		t.Fatalf("first range saw %q at %d", got, r[0].GetResponseRange().Header.Revision)
	}
	if got := kvsString(r[3].GetResponseRange().Kvs); got != "x=1 c3 m3 v1 l0; y=2 c3 m3 v1 l0" {
		t.Fatalf("second range saw %s", got)
	}
	if r[1].GetResponsePut().Header.Revision != 3 || r[4].GetResponseDeleteRange().Deleted != 1 || r[5].GetResponseDeleteRange().Deleted != 0 {
		t.Fatalf("sub responses %v", r)
	}
	wantRevs := map[string]Revision{"x": {3, 0}, "y": {3, 1}, "k": {3, 2}}
	for k, want := range wantRevs {
		h := s.unsafeLookup([]byte(k))
		if got := h.revs[len(h.revs)-1].rev(); got != want {
			t.Errorf("%s written at %v, want %v", k, got, want)
		}
	}
}

func TestReadOnlyTxnCreatesNoRevision(t *testing.T) {
	s := New()
	put(t, s, "a", "1")
	tests := []struct {
		name string
		req  *pb.TxnRequest
	}{
		{"ranges only", &pb.TxnRequest{Success: []*pb.RequestOp{opRange("a", ""), opRange("a", "z")}}},
		{"delete of nothing", &pb.TxnRequest{Success: []*pb.RequestOp{opDel("zz", "")}}},
		{"empty", &pb.TxnRequest{}},
		{"failed compare, empty failure branch", &pb.TxnRequest{Compare: []*pb.Compare{cmpValue("a", pb.Compare_EQUAL, "x")}, Success: []*pb.RequestOp{opPut("b", "1")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.Txn(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if s.Rev() != 2 || resp.Header.Revision != 2 {
				t.Fatalf("revision %d (header %d), want 2", s.Rev(), resp.Header.Revision)
			}
		})
	}
}

func TestNestedTxn(t *testing.T) {
	s := New()
	put(t, s, "guard", "on") // 2
	inner := &pb.TxnRequest{
		// Compares see the state before the whole txn: "a" does not exist
		// yet although the outer txn has just put it.
		Compare: []*pb.Compare{cmpInt("a", pb.Compare_VERSION, pb.Compare_EQUAL, 0)},
		Success: []*pb.RequestOp{opPut("b", "inner-success"), opRange("a", "")},
		Failure: []*pb.RequestOp{opPut("b", "inner-failure")},
	}
	resp, err := s.Txn(&pb.TxnRequest{
		Compare: []*pb.Compare{cmpValue("guard", pb.Compare_EQUAL, "on")},
		Success: []*pb.RequestOp{opPut("a", "outer"), opTxn(inner), opRange("a", "c")},
	})
	if err != nil {
		t.Fatal(err)
	}
	nested := resp.Responses[1].GetResponseTxn()
	if !resp.Succeeded || !nested.Succeeded {
		t.Fatalf("outer %v inner %v", resp.Succeeded, nested.Succeeded)
	}
	if got := kvsString(nested.Responses[1].GetResponseRange().Kvs); got != "a=outer c3 m3 v1 l0" {
		t.Fatalf("inner range saw %s", got)
	}
	if got := keysOf(resp.Responses[2].GetResponseRange().Kvs); got != "a,b" {
		t.Fatalf("outer range saw %s", got)
	}
	if got := kvString(get(t, s, "b", 0)); got != "b=inner-success c3 m3 v1 l0" || s.Rev() != 3 {
		t.Fatalf("b is %s at store revision %d", got, s.Rev())
	}

	// The same txn again: now "a" exists before the txn, so the inner
	// compare fails and the inner failure branch runs.
	resp, err = s.Txn(&pb.TxnRequest{
		Compare: []*pb.Compare{cmpValue("guard", pb.Compare_EQUAL, "on")},
		Success: []*pb.RequestOp{opPut("a", "outer2"), opTxn(inner)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Responses[1].GetResponseTxn().Succeeded {
		t.Fatal("inner compare should have failed")
	}
	if got := string(get(t, s, "b", 0).Value); got != "inner-failure" {
		t.Fatalf("b is %s", got)
	}
}

func TestTxnDuplicateKeyRejected(t *testing.T) {
	nested := func(then, els []*pb.RequestOp) *pb.RequestOp {
		return opTxn(&pb.TxnRequest{Success: then, Failure: els})
	}
	ops := func(o ...*pb.RequestOp) []*pb.RequestOp { return o }
	tests := []struct {
		name    string
		success []*pb.RequestOp
		failure []*pb.RequestOp
		dup     bool
	}{
		{"put twice", ops(opPut("a", "1"), opPut("a", "2")), nil, true},
		{"put then delete", ops(opPut("a", "1"), opDel("a", "")), nil, true},
		{"delete then put", ops(opDel("a", ""), opPut("a", "1")), nil, true},
		{"range delete covers put", ops(opDel("a", "c"), opPut("b", "1")), nil, true},
		{"from-key delete covers put", ops(opDel("a", "\x00"), opPut("z", "1")), nil, true},
		{"delete twice is fine", ops(opDel("a", ""), opDel("a", "c")), nil, false},
		{"puts on different keys", ops(opPut("a", "1"), opPut("b", "1"), opDel("c", "d")), nil, false},
		{"range delete ends before put", ops(opDel("a", "b"), opPut("b", "1")), nil, false},
		{"same key in the two top branches", ops(opPut("a", "1")), ops(opPut("a", "2")), false},
		{"duplicate in failure branch only", ops(opPut("a", "1")), ops(opPut("b", "1"), opPut("b", "2")), true},
		{"nested then and else may share a key", ops(nested(ops(opPut("a", "1")), ops(opPut("a", "2")))), nil, false},
		{"outer put and nested put", ops(opPut("a", "1"), nested(ops(opPut("a", "2")), nil)), nil, true},
		{"outer put and nested else put", ops(opPut("a", "1"), nested(nil, ops(opPut("a", "2")))), nil, true},
		{"outer delete and nested put", ops(opDel("a", "z"), nested(ops(opPut("m", "2")), nil)), nil, true},
		{"nested delete and outer put", ops(nested(ops(opDel("a", "")), nil), opPut("a", "1")), nil, true},
		{"duplicate inside nested", ops(nested(ops(opPut("a", "1"), opPut("a", "2")), nil)), nil, true},
		{"two nested txns put one key", ops(nested(ops(opPut("a", "1")), nil), nested(ops(opPut("a", "2")), nil)), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			_, err := s.Txn(&pb.TxnRequest{Success: tt.success, Failure: tt.failure})
			if tt.dup {
				wantErr(t, err, ErrDuplicateKey)
				if s.Rev() != 1 {
					t.Fatalf("rejected txn moved the revision to %d", s.Rev())
				}
			} else if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}

func TestTxnErrorLeavesStateUntouched(t *testing.T) {
	badLease := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("b"), Value: []byte("x"), Lease: 99}}}
	ignoreMissing := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("missing"), IgnoreValue: true}}}
	futureRange := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("a"), Revision: 4}}}
	compactedRange := &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("a"), Revision: 1}}}
	tests := []struct {
		name string
		req  *pb.TxnRequest
		want error
	}{
		{"unknown lease after a put", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "new"), badLease}}, ErrLeaseNotFound},
		{"ignore_value on a missing key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "new"), ignoreMissing}}, ErrKeyNotFound},
		{"range at a future revision", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "new"), futureRange}}, ErrFutureRev},
		{"range at a compacted revision", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "new"), compactedRange}}, ErrCompacted},
		{"error in a nested txn", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "new"), opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{badLease}})}}, ErrLeaseNotFound},
		{"empty compare key", &pb.TxnRequest{Compare: []*pb.Compare{{Target: pb.Compare_VERSION}}}, ErrEmptyKey},
		{"empty op key", &pb.TxnRequest{Failure: []*pb.RequestOp{opPut("", "v")}}, ErrEmptyKey},
		{"nil op request", &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{}}}}, ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			put(t, s, "a", "old") // 2
			put(t, s, "z", "old") // 3
			if _, err := s.Compact(2); err != nil {
				t.Fatal(err)
			}
			before := all(t, s, 0)
			_, err := s.Txn(tt.req)
			wantErr(t, err, tt.want)
			if s.Rev() != 3 || all(t, s, 0) != before {
				t.Fatalf("state changed: rev %d, %s", s.Rev(), all(t, s, 0))
			}
		})
	}
}

func TestTxnValidatesOnlyTheChosenBranch(t *testing.T) {
	s := New()
	badLease := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("b"), Lease: 99}}}
	resp, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("a", "1")}, Failure: []*pb.RequestOp{badLease}})
	if err != nil || !resp.Succeeded {
		t.Fatalf("err %v succeeded %v", err, resp.GetSucceeded())
	}
}
