package mvcc

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestNewStoreStartsAtRevisionOne(t *testing.T) {
	s := New()
	if s.Rev() != 1 || s.CompactRev() != 0 || s.KeyCount() != 0 || s.Size() != 0 {
		t.Fatalf("rev %d compact %d keys %d size %d", s.Rev(), s.CompactRev(), s.KeyCount(), s.Size())
	}
	if got := all(t, s, 1); got != "" {
		t.Fatalf("empty store has %s", got)
	}
}

func TestPutTracksRevisionsAndVersions(t *testing.T) {
	s := New()
	steps := []struct {
		name string
		do   func() int64
		key  string
		want string
	}{
		{"create a", func() int64 { return put(t, s, "a", "1") }, "a", "a=1 c2 m2 v1 l0"},
		{"update a", func() int64 { return put(t, s, "a", "2") }, "a", "a=2 c2 m3 v2 l0"},
		{"create b", func() int64 { return put(t, s, "b", "1") }, "b", "b=1 c4 m4 v1 l0"},
		{"update a again", func() int64 { return put(t, s, "a", "3") }, "a", "a=3 c2 m5 v3 l0"},
		{"empty value", func() int64 { return put(t, s, "b", "") }, "b", "b= c4 m6 v2 l0"},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if rev := st.do(); rev != int64(i+2) {
				t.Fatalf("revision %d, want %d", rev, i+2)
			}
			if got := kvString(get(t, s, st.key, 0)); got != st.want {
				t.Fatalf("got %s, want %s", got, st.want)
			}
		})
	}
	if s.KeyCount() != 2 {
		t.Fatalf("key count %d, want 2", s.KeyCount())
	}
}

func TestDeleteLeavesTombstoneAndPutRecreates(t *testing.T) {
	s := New()
	put(t, s, "k", "v1") // 2
	put(t, s, "k", "v2") // 3
	if n := del(t, s, "k", ""); n != 1 {
		t.Fatalf("deleted %d", n)
	}
	// 4 is the tombstone
	put(t, s, "k", "v3") // 5
	tests := []struct {
		rev  int64
		want string
	}{
		{1, "<nil>"},
		{2, "k=v1 c2 m2 v1 l0"},
		{3, "k=v2 c2 m3 v2 l0"},
		{4, "<nil>"},
		{5, "k=v3 c5 m5 v1 l0"},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			if got := kvString(get(t, s, "k", tt.rev)); got != tt.want {
				t.Fatalf("at %d: got %s, want %s", tt.rev, got, tt.want)
			}
		})
	}
	if s.KeyCount() != 1 {
		t.Fatalf("key count %d", s.KeyCount())
	}
}

func TestPutOptions(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, s *Store)
		req     *pb.PutRequest
		wantErr error
		want    string // the key afterwards
		prev    string // PrevKv in the response
	}{
		{
			name: "prev_kv of a new key is empty",
			req:  &pb.PutRequest{Key: []byte("k"), Value: []byte("v"), PrevKv: true},
			want: "k=v c2 m2 v1 l0", prev: "<nil>",
		},
		{
			name:  "prev_kv returns the old value",
			setup: func(t *testing.T, s *Store) { put(t, s, "k", "old") },
			req:   &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), PrevKv: true},
			want:  "k=new c2 m3 v2 l0", prev: "k=old c2 m2 v1 l0",
		},
		{
			name:  "prev_kv not asked for",
			setup: func(t *testing.T, s *Store) { put(t, s, "k", "old") },
			req:   &pb.PutRequest{Key: []byte("k"), Value: []byte("new")},
			want:  "k=new c2 m3 v2 l0", prev: "<nil>",
		},
		{
			name: "ignore_value keeps the value",
			setup: func(t *testing.T, s *Store) {
				mustGrant(t, s, 7)
				put(t, s, "k", "old")
			},
			req:  &pb.PutRequest{Key: []byte("k"), IgnoreValue: true, Lease: 7},
			want: "k=old c2 m3 v2 l7", prev: "<nil>",
		},
		{
			name: "ignore_lease keeps the lease",
			setup: func(t *testing.T, s *Store) {
				mustGrant(t, s, 7)
				putLease(t, s, "k", "old", 7)
			},
			req:  &pb.PutRequest{Key: []byte("k"), Value: []byte("new"), IgnoreLease: true},
			want: "k=new c2 m3 v2 l7", prev: "<nil>",
		},
		{
			name:    "ignore_value on a missing key",
			req:     &pb.PutRequest{Key: []byte("k"), IgnoreValue: true},
			wantErr: ErrKeyNotFound, want: "<nil>",
		},
		{
			name:    "ignore_lease on a deleted key",
			setup:   func(t *testing.T, s *Store) { put(t, s, "k", "v"); del(t, s, "k", "") },
			req:     &pb.PutRequest{Key: []byte("k"), Value: []byte("x"), IgnoreLease: true},
			wantErr: ErrKeyNotFound, want: "<nil>",
		},
		{
			name:    "unknown lease",
			req:     &pb.PutRequest{Key: []byte("k"), Value: []byte("v"), Lease: 99},
			wantErr: ErrLeaseNotFound, want: "<nil>",
		},
		{
			name:    "empty key",
			req:     &pb.PutRequest{Value: []byte("v")},
			wantErr: ErrEmptyKey, want: "<nil>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before := s.Rev()
			resp, err := s.Put(tt.req)
			wantErr(t, err, tt.wantErr)
			if err != nil {
				if s.Rev() != before {
					t.Fatalf("failed put moved the revision to %d", s.Rev())
				}
			} else {
				if resp.Header.Revision != before+1 {
					t.Fatalf("header revision %d, want %d", resp.Header.Revision, before+1)
				}
				if got := kvString(resp.PrevKv); got != tt.prev {
					t.Fatalf("prev %s, want %s", got, tt.prev)
				}
			}
			if got := kvString(get(t, s, "k", 0)); got != tt.want {
				t.Fatalf("key is %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDeleteRange(t *testing.T) {
	seed := func(t *testing.T) *Store {
		s := New()
		for _, k := range []string{"a", "b", "b1", "b2", "c"} {
			put(t, s, k, "v"+k)
		}
		return s // at revision 6
	}
	tests := []struct {
		name     string
		req      *pb.DeleteRangeRequest
		deleted  int64
		prevKeys string
		left     string
		rev      int64
	}{
		{"one key", &pb.DeleteRangeRequest{Key: []byte("b")}, 1, "", "a,b1,b2,c", 7},
		{"missing key creates no revision", &pb.DeleteRangeRequest{Key: []byte("zz")}, 0, "", "a,b,b1,b2,c", 6},
		{"range", &pb.DeleteRangeRequest{Key: []byte("b"), RangeEnd: []byte("c"), PrevKv: true}, 3, "b,b1,b2", "a,c", 7},
		{"prefix", &pb.DeleteRangeRequest{Key: []byte("b1"), RangeEnd: []byte("b2"), PrevKv: true}, 1, "b1", "a,b,b2,c", 7},
		{"from key", &pb.DeleteRangeRequest{Key: []byte("b2"), RangeEnd: []byte{0}, PrevKv: true}, 2, "b2,c", "a,b,b1", 7},
		{"everything", &pb.DeleteRangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}, 5, "", "", 7},
		{"end before key", &pb.DeleteRangeRequest{Key: []byte("c"), RangeEnd: []byte("a")}, 0, "", "a,b,b1,b2,c", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := seed(t)
			resp, err := s.DeleteRange(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Deleted != tt.deleted || resp.Header.Revision != tt.rev || s.Rev() != tt.rev {
				t.Fatalf("deleted %d at %d (store %d), want %d at %d", resp.Deleted, resp.Header.Revision, s.Rev(), tt.deleted, tt.rev)
			}
			if got := keysOf(resp.PrevKvs); got != tt.prevKeys {
				t.Fatalf("prev keys %q, want %q", got, tt.prevKeys)
			}
			r, _ := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
			if got := keysOf(r.Kvs); got != tt.left {
				t.Fatalf("left %q, want %q", got, tt.left)
			}
			if s.KeyCount() != int64(len(r.Kvs)) {
				t.Fatalf("key count %d, want %d", s.KeyCount(), len(r.Kvs))
			}
		})
	}
	t.Run("empty key", func(t *testing.T) {
		_, err := New().DeleteRange(&pb.DeleteRangeRequest{})
		wantErr(t, err, ErrEmptyKey)
	})
}

func TestDeletedKeysShareOneRevisionWithIncreasingSub(t *testing.T) {
	s := New()
	put(t, s, "a", "1")
	put(t, s, "b", "1")
	del(t, s, "a", "c")
	h := s.unsafeLookup([]byte("b"))
	a := s.unsafeLookup([]byte("a"))
	if got := a.revs[1].rev(); got != (Revision{4, 0}) {
		t.Fatalf("a tombstone at %v", got)
	}
	if got := h.revs[1].rev(); got != (Revision{4, 1}) {
		t.Fatalf("b tombstone at %v", got)
	}
}

func TestSizeGrowsWithHistory(t *testing.T) {
	s := New()
	put(t, s, "key", "value")
	one := s.Size()
	if one < int64(len("key")+len("value")) {
		t.Fatalf("size %d too small", one)
	}
	put(t, s, "key", "value")
	if s.Size() != 2*one {
		t.Fatalf("size %d after two puts, want %d", s.Size(), 2*one)
	}
}

func mustGrant(t testing.TB, s *Store, id int64) {
	t.Helper()
	if err := s.LeaseGrant(id, 60); err != nil {
		t.Fatalf("grant %d: %v", id, err)
	}
}
