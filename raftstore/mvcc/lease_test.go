package mvcc

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func leaseKeys(t *testing.T, s *Store, id int64) string {
	t.Helper()
	l, ok := s.Lease(id)
	if !ok {
		return "<none>"
	}
	parts := make([]string, len(l.Keys))
	for i, k := range l.Keys {
		parts[i] = string(k)
	}
	return strings.Join(parts, ",")
}

func TestLeaseGrant(t *testing.T) {
	s := New()
	mustGrant(t, s, 3)
	tests := []struct {
		name string
		id   int64
		want error
	}{
		{"new id", 1, nil},
		{"existing id", 3, ErrLeaseExists},
		{"zero id", 0, ErrInvalidLeaseID},
		{"negative id", -4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, s.LeaseGrant(tt.id, 10), tt.want)
		})
	}
	var ids []int64
	for _, l := range s.Leases() {
		ids = append(ids, l.ID)
	}
	if len(ids) != 3 || ids[0] != -4 || ids[1] != 1 || ids[2] != 3 {
		t.Fatalf("leases %v, want sorted [-4 1 3]", ids)
	}
	if l, _ := s.Lease(3); l.TTL != 60 {
		t.Fatalf("TTL %d", l.TTL)
	}
	if s.Rev() != 1 {
		t.Fatalf("grant created revision %d", s.Rev())
	}
}

func TestLeaseAttachAndDetach(t *testing.T) {
	s := New()
	mustGrant(t, s, 1)
	mustGrant(t, s, 2)
	steps := []struct {
		name           string
		do             func()
		lease1, lease2 string
	}{
		{"attach two keys", func() { putLease(t, s, "k2", "v", 1); putLease(t, s, "k1", "v", 1) }, "k1,k2", ""},
		{"move a key to another lease", func() { putLease(t, s, "k2", "v", 2) }, "k1", "k2"},
		{"put without lease detaches", func() { put(t, s, "k1", "v") }, "", "k2"},
		{"ignore_lease keeps it", func() {
			if _, err := s.Put(&pb.PutRequest{Key: []byte("k2"), Value: []byte("x"), IgnoreLease: true}); err != nil {
				t.Fatal(err)
			}
		}, "", "k2"},
		{"attach in a txn", func() {
			op := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k3"), Lease: 1}}}
			if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{op}}); err != nil {
				t.Fatal(err)
			}
		}, "k3", "k2"},
		{"delete detaches", func() { del(t, s, "k2", "") }, "k3", ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			if got := leaseKeys(t, s, 1); got != st.lease1 {
				t.Errorf("lease 1 keys %q, want %q", got, st.lease1)
			}
			if got := leaseKeys(t, s, 2); got != st.lease2 {
				t.Errorf("lease 2 keys %q, want %q", got, st.lease2)
			}
		})
	}
}

func TestLeaseRevokeDeletesKeysInOneRevision(t *testing.T) {
	s := New()
	mustGrant(t, s, 1)
	mustGrant(t, s, 2)
	putLease(t, s, "c", "v", 1) // 2
	putLease(t, s, "a", "v", 1) // 3
	putLease(t, s, "b", "v", 2) // 4
	put(t, s, "d", "v")         // 5

	resp, err := s.LeaseRevoke(1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != 6 || s.Rev() != 6 {
		t.Fatalf("revoke at %d, store at %d, want 6", resp.Header.Revision, s.Rev())
	}
	if got := keysOf(mustRange(t, s, "\x00", "\x00").Kvs); got != "b,d" {
		t.Fatalf("left %s", got)
	}
	// Keys go in key order, so every replica numbers them the same.
	for key, want := range map[string]Revision{"a": {6, 0}, "c": {6, 1}} {
		h := s.unsafeLookup([]byte(key))
		if got := h.revs[len(h.revs)-1].rev(); got != want || !h.revs[len(h.revs)-1].tombstone() {
			t.Errorf("%s tombstone at %v, want %v", key, got, want)
		}
	}
	if _, ok := s.Lease(1); ok {
		t.Fatal("lease 1 still exists")
	}
	if _, err := s.Put(&pb.PutRequest{Key: []byte("x"), Lease: 1}); err == nil {
		t.Fatal("put to a revoked lease succeeded")
	}
	_, err = s.LeaseRevoke(1)
	wantErr(t, err, ErrLeaseNotFound)

	del(t, s, "b", "") // 7: lease 2 is now empty
	resp, err = s.LeaseRevoke(2)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != 7 || s.Rev() != 7 {
		t.Fatalf("revoking an empty lease created revision %d", s.Rev())
	}
}

func mustRange(t *testing.T, s *Store, key, end string) *pb.RangeResponse {
	t.Helper()
	req := &pb.RangeRequest{Key: []byte(key)}
	if end != "" {
		req.RangeEnd = []byte(end)
	}
	resp, err := s.Range(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
