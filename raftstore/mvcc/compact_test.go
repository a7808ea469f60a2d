package mvcc

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// history builds a store whose keys went through puts, deletes and
// recreation, and returns it with the full reads at every revision.
func history(t *testing.T) (*Store, map[int64]string) {
	s := New()
	put(t, s, "a", "1") // 2
	put(t, s, "b", "1") // 3
	put(t, s, "a", "2") // 4
	del(t, s, "b", "")  // 5
	put(t, s, "c", "1") // 6
	put(t, s, "b", "2") // 7
	del(t, s, "a", "b") // 8
	put(t, s, "c", "2") // 9
	del(t, s, "c", "")  // 10
	put(t, s, "d", "1") // 11
	put(t, s, "d", "2") // 12
	reads := map[int64]string{}
	for rev := int64(1); rev <= s.Rev(); rev++ {
		reads[rev] = all(t, s, rev)
	}
	return s, reads
}

func TestCompactKeepsAnswersAtAndAfterTheRevision(t *testing.T) {
	for _, at := range []int64{1, 2, 4, 5, 8, 10, 11, 12} {
		t.Run("", func(t *testing.T) {
			s, reads := history(t)
			sizeBefore := s.Size()
			resp, err := s.Compact(at)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Revision != 12 || s.CompactRev() != at || s.Rev() != 12 {
				t.Fatalf("header %d compact %d rev %d", resp.Header.Revision, s.CompactRev(), s.Rev())
			}
			for rev := int64(1); rev <= 12; rev++ {
				resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, Revision: rev})
				if rev < at {
					wantErr(t, err, ErrCompacted)
					continue
				}
				if err != nil {
					t.Fatalf("read at %d: %v", rev, err)
				}
				if got := kvsString(resp.Kvs); got != reads[rev] {
					t.Fatalf("compact %d, read at %d: %s, want %s", at, rev, got, reads[rev])
				}
			}
			if at > 2 && s.Size() >= sizeBefore {
				t.Fatalf("size %d not below %d", s.Size(), sizeBefore)
			}
		})
	}
}

func TestCompactDropsWhatNoReadNeeds(t *testing.T) {
	s, _ := history(t)
	tests := []struct {
		at   int64
		keys map[string]int // key -> records kept; absent = not indexed
	}{
		// a: 2,4,8(tomb) b: 3,5(tomb),7 c: 6,9,10(tomb) d: 11,12
		{4, map[string]int{"a": 2, "b": 3, "c": 3, "d": 2}},
		{5, map[string]int{"a": 2, "b": 2, "c": 3, "d": 2}}, // tombstone exactly at 5 stays
		{8, map[string]int{"a": 1, "b": 1, "c": 3, "d": 2}}, // and goes at the next compaction
		{11, map[string]int{"b": 1, "d": 2}},
		{12, map[string]int{"b": 1, "d": 1}},
	}
	for _, tt := range tests {
		if _, err := s.Compact(tt.at); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c", "d"} {
			h := s.unsafeLookup([]byte(k))
			got := 0
			if h != nil {
				got = len(h.revs)
			}
			if got != tt.keys[k] {
				t.Errorf("compact %d: %s keeps %d records, want %d", tt.at, k, got, tt.keys[k])
			}
		}
		if s.index.Len() != len(tt.keys) {
			t.Errorf("compact %d: %d keys indexed, want %d", tt.at, s.index.Len(), len(tt.keys))
		}
	}
	if s.KeyCount() != 2 {
		t.Fatalf("key count %d", s.KeyCount())
	}
}

func TestCompactErrors(t *testing.T) {
	s, _ := history(t)
	if _, err := s.Compact(6); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   int64
		want error
	}{
		{6, ErrCompacted},
		{3, ErrCompacted},
		{0, ErrCompacted},
		{13, ErrFutureRev},
	}
	for _, tt := range tests {
		_, err := s.Compact(tt.at)
		wantErr(t, err, tt.want)
	}
	if s.CompactRev() != 6 {
		t.Fatalf("compact rev %d", s.CompactRev())
	}
}

func TestCompactThenWriteMore(t *testing.T) {
	s := New()
	for i := range 3000 {
		put(t, s, string(rune('a'+i%7)), "v")
		if i%500 == 499 {
			if _, err := s.Compact(s.Rev() - 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.log.len() > 3*logChunk {
		t.Fatalf("log still holds %d entries", s.log.len())
	}
	if got := all(t, s, s.CompactRev()); got == "" {
		t.Fatal("nothing readable at the compact revision")
	}
	// Every kept log entry is at or after the compact revision.
	if first := s.log.at(0).kv.ModRevision; first < s.CompactRev() {
		t.Fatalf("log starts at %d, compact revision %d", first, s.CompactRev())
	}
}
