package mvcc

import (
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// rangeFixture builds, at revision 10:
//
//	a=1 c2 m5 v2, b=0 c3 m8 v3, c=2 c4 m4 v1, e=9 c10 m10 v1 (d deleted at 9)
func rangeFixture(t *testing.T) *Store {
	s := New()
	put(t, s, "a", "3") // 2
	put(t, s, "b", "1") // 3
	put(t, s, "c", "2") // 4
	put(t, s, "a", "1") // 5
	put(t, s, "d", "4") // 6
	put(t, s, "b", "5") // 7
	put(t, s, "b", "0") // 8
	del(t, s, "d", "")  // 9
	put(t, s, "e", "9") // 10
	return s
}

func TestRangeOptions(t *testing.T) {
	s := rangeFixture(t)
	all := []byte{0}
	tests := []struct {
		name  string
		req   *pb.RangeRequest
		keys  string
		count int64
		more  bool
	}{
		{"single key", &pb.RangeRequest{Key: []byte("a")}, "a", 1, false},
		{"missing key", &pb.RangeRequest{Key: []byte("zz")}, "", 0, false},
		{"deleted key", &pb.RangeRequest{Key: []byte("d")}, "", 0, false},
		{"range", &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte("c")}, "a,b", 2, false},
		{"end before key", &pb.RangeRequest{Key: []byte("c"), RangeEnd: []byte("a")}, "", 0, false},
		{"from key", &pb.RangeRequest{Key: []byte("b"), RangeEnd: all}, "b,c,e", 3, false},
		{"everything", &pb.RangeRequest{Key: all, RangeEnd: all}, "a,b,c,e", 4, false},
		{"limit", &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 2}, "a,b", 4, true},
		{"limit equal to count", &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 4}, "a,b,c,e", 4, false},
		{"limit above count", &pb.RangeRequest{Key: all, RangeEnd: all, Limit: 10}, "a,b,c,e", 4, false},
		{"old revision", &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 6}, "a,b,c,d", 4, false},
		{"old revision limit", &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 6, Limit: 3}, "a,b,c", 4, true},
		{"first revision", &pb.RangeRequest{Key: all, RangeEnd: all, Revision: 1}, "", 0, false},
		{"count only", &pb.RangeRequest{Key: all, RangeEnd: all, CountOnly: true}, "", 4, false},
		{"count only with limit", &pb.RangeRequest{Key: all, RangeEnd: all, CountOnly: true, Limit: 1}, "", 4, false},
		{"key descending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND}, "e,c,b,a", 4, false},
		{"key ascending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_ASCEND}, "a,b,c,e", 4, false},
		{"key descending limit", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND, Limit: 1}, "e", 4, true},
		{"version ascending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_VERSION}, "c,e,a,b", 4, false},
		{"version with no order is ascending", &pb.RangeRequest{Key: all, RangeEnd: all, SortTarget: pb.RangeRequest_VERSION}, "c,e,a,b", 4, false},
		{"version descending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_VERSION}, "b,a,c,e", 4, false},
		{"create descending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_CREATE}, "e,c,b,a", 4, false},
		{"mod ascending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_MOD}, "c,a,b,e", 4, false},
		{"value ascending", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_VALUE}, "b,a,c,e", 4, false},
		{"value descending limit", &pb.RangeRequest{Key: all, RangeEnd: all, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_VALUE, Limit: 2}, "e,c", 4, true},
		{"min mod revision", &pb.RangeRequest{Key: all, RangeEnd: all, MinModRevision: 5}, "a,b,e", 4, false},
		{"max mod revision", &pb.RangeRequest{Key: all, RangeEnd: all, MaxModRevision: 5}, "a,c", 4, false},
		{"min create revision", &pb.RangeRequest{Key: all, RangeEnd: all, MinCreateRevision: 4}, "c,e", 4, false},
		{"max create revision", &pb.RangeRequest{Key: all, RangeEnd: all, MaxCreateRevision: 3}, "a,b", 4, false},
		{"filters then limit", &pb.RangeRequest{Key: all, RangeEnd: all, MinModRevision: 5, Limit: 2}, "a,b", 4, true},
		{"filter and sort", &pb.RangeRequest{Key: all, RangeEnd: all, MaxCreateRevision: 4, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_MOD}, "b,a,c", 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.Range(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(resp.Kvs); got != tt.keys {
				t.Errorf("keys %q, want %q", got, tt.keys)
			}
			if resp.Count != tt.count || resp.More != tt.more {
				t.Errorf("count %d more %v, want %d %v", resp.Count, resp.More, tt.count, tt.more)
			}
			if resp.Header.Revision != 10 {
				t.Errorf("header revision %d, want the current 10", resp.Header.Revision)
			}
		})
	}
}

func TestRangeKeysOnlyLeavesStoredValues(t *testing.T) {
	s := rangeFixture(t)
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("a"), KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := kvString(resp.Kvs[0]); got != "a= c2 m5 v2 l0" {
		t.Fatalf("keys only gave %s", got)
	}
	if got := kvString(get(t, s, "a", 0)); got != "a=1 c2 m5 v2 l0" {
		t.Fatalf("stored value now %s", got)
	}
}

func TestRangeErrors(t *testing.T) {
	s := rangeFixture(t)
	tests := []struct {
		name string
		req  *pb.RangeRequest
		want error
	}{
		{"future revision", &pb.RangeRequest{Key: []byte("a"), Revision: 11}, ErrFutureRev},
		{"empty key", &pb.RangeRequest{RangeEnd: []byte("z")}, ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Range(tt.req)
			wantErr(t, err, tt.want)
		})
	}
}

func TestRangeLargerThanOneChunk(t *testing.T) {
	s := New()
	n := 2*rangeChunk + 17
	for i := range n {
		put(t, s, fmt.Sprintf("k%05d", i), "v")
	}
	del(t, s, "k00005", "")
	resp, err := s.Range(&pb.RangeRequest{Key: []byte("k"), RangeEnd: []byte("l")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != int64(n-1) || len(resp.Kvs) != n-1 {
		t.Fatalf("count %d, %d kvs, want %d", resp.Count, len(resp.Kvs), n-1)
	}
	for i := 1; i < len(resp.Kvs); i++ {
		if string(resp.Kvs[i-1].Key) >= string(resp.Kvs[i].Key) {
			t.Fatalf("out of order at %d", i)
		}
	}
	lim, err := s.Range(&pb.RangeRequest{Key: []byte("k"), RangeEnd: []byte("l"), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if lim.Count != int64(n-1) || !lim.More || keysOf(lim.Kvs) != "k00000,k00001,k00002,k00003,k00004" {
		t.Fatalf("limited: count %d more %v keys %s", lim.Count, lim.More, keysOf(lim.Kvs))
	}
}
