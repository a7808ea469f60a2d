package mvcc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// sampleOps applies a history with leases, deletes, a txn and a compaction.
func sampleOps(t *testing.T, s *Store) {
	mustGrant(t, s, 10)
	mustGrant(t, s, 20)
	putLease(t, s, "lease/a", "1", 10)
	putLease(t, s, "lease/b", "1", 20)
	put(t, s, "k1", "v1")
	put(t, s, "k2", "v1")
	put(t, s, "k1", "v2")
	del(t, s, "k2", "")
	if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("t1", "x"), opPut("t2", "y"), opDel("k1", "")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(5); err != nil {
		t.Fatal(err)
	}
	put(t, s, "k2", "again")
	del(t, s, "t1", "")
}

func snapshotBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Snapshot().WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func hashOf(t *testing.T, s *Store, rev int64) uint32 {
	t.Helper()
	h, _, _, err := s.HashKV(rev)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	s := New()
	sampleOps(t, s)
	data := snapshotBytes(t, s)

	c := New()
	put(t, c, "stale", "gone after restore")
	if err := c.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if c.Rev() != s.Rev() || c.CompactRev() != s.CompactRev() || c.KeyCount() != s.KeyCount() || c.Size() != s.Size() {
		t.Fatalf("restored rev %d compact %d keys %d size %d; want %d %d %d %d",
			c.Rev(), c.CompactRev(), c.KeyCount(), c.Size(), s.Rev(), s.CompactRev(), s.KeyCount(), s.Size())
	}
	for rev := s.CompactRev(); rev <= s.Rev(); rev++ {
		if got, want := all(t, c, rev), all(t, s, rev); got != want {
			t.Fatalf("at %d: %s, want %s", rev, got, want)
		}
		if hashOf(t, c, rev) != hashOf(t, s, rev) {
			t.Fatalf("hash at %d differs", rev)
		}
	}
	if got, want := leaseKeys(t, c, 10)+"|"+leaseKeys(t, c, 20), "lease/a|lease/b"; got != want {
		t.Fatalf("restored leases %s", got)
	}
	if !bytes.Equal(snapshotBytes(t, c), data) {
		t.Fatal("a restored store writes a different snapshot")
	}
	// Both stores go on identically.
	for _, st := range []*Store{s, c} {
		put(t, st, "k1", "later")
		if _, err := st.LeaseRevoke(10); err != nil {
			t.Fatal(err)
		}
	}
	if hashOf(t, c, 0) != hashOf(t, s, 0) || all(t, c, 0) != all(t, s, 0) {
		t.Fatal("stores diverged after restore")
	}
}

func TestSnapshotIsImmutable(t *testing.T) {
	s := New()
	sampleOps(t, s)
	sn := s.Snapshot()
	want := snapshotBytes(t, s)
	// Writes, deletes and a compaction after the snapshot do not show in it.
	put(t, s, "k2", "changed")
	put(t, s, "new", "key")
	del(t, s, "lease", "lease0")
	if _, err := s.Compact(s.Rev()); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := sn.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("snapshot changed after later writes")
	}
	if sn.Rev() != 10 {
		t.Fatalf("snapshot rev %d", sn.Rev())
	}
}

func TestRestoreRejectsBadStreamsAndKeepsState(t *testing.T) {
	src := New()
	sampleOps(t, src)
	data := snapshotBytes(t, src)
	flip := func(i int) []byte {
		b := bytes.Clone(data)
		b[i] ^= 0x40
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic only", data[:8]},
		{"truncated in the header", data[:11]},
		{"truncated mid-record", data[:len(data)/2]},
		{"missing checksum", data[:len(data)-4]},
		{"partial checksum", data[:len(data)-1]},
		{"bad magic", flip(0)},
		{"flipped byte in a record", flip(len(data) / 2)},
		{"flipped checksum", flip(len(data) - 1)},
		{"unknown version", append(append([]byte(snapMagic), 9), data[9:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			put(t, s, "mine", "1")
			mustGrant(t, s, 77)
			before, hash := all(t, s, 0), hashOf(t, s, 0)
			err := s.Restore(bytes.NewReader(tt.data))
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v, want ErrCorruptSnapshot", err)
			}
			if all(t, s, 0) != before || hashOf(t, s, 0) != hash || s.Rev() != 2 {
				t.Fatal("a failed restore changed the store")
			}
			if _, ok := s.Lease(77); !ok {
				t.Fatal("a failed restore dropped a lease")
			}
		})
	}
}

func TestRestoreReportsReadErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	s := New()
	err := s.Restore(io.MultiReader(bytes.NewReader([]byte(snapMagic)), errReader{boom}))
	if !errors.Is(err, boom) || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("error %v, want the read error", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestSnapshotEmbedsInALargerStream(t *testing.T) {
	s := New()
	sampleOps(t, s)
	var buf bytes.Buffer
	buf.WriteString("before|")
	if _, err := s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("|after")
	br := bufio.NewReader(&buf)
	prefix := make([]byte, len("before|"))
	if _, err := io.ReadFull(br, prefix); err != nil {
		t.Fatal(err)
	}
	c := New()
	if err := c.Restore(br); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "|after" {
		t.Fatalf("restore consumed past the snapshot: left %q", rest)
	}
}

func TestHashKV(t *testing.T) {
	a, b := New(), New()
	sampleOps(t, a)
	sampleOps(t, b)
	if hashOf(t, a, 0) != hashOf(t, b, 0) {
		t.Fatal("same history, different hashes")
	}
	h, rev, compact, err := a.HashKV(0)
	if err != nil || rev != a.Rev() || compact != 5 || h == 0 {
		t.Fatalf("hash %d rev %d compact %d err %v", h, rev, compact, err)
	}

	// A hash at an older revision equals the current hash of a replica that
	// stopped there.
	older := New()
	mustGrant(t, older, 10)
	mustGrant(t, older, 20)
	putLease(t, older, "lease/a", "1", 10)
	putLease(t, older, "lease/b", "1", 20)
	put(t, older, "k1", "v1")
	put(t, older, "k2", "v1")
	put(t, older, "k1", "v2")
	if hashOf(t, older, 0) != hashOf(t, a, older.Rev()) {
		t.Fatal("hash at an old revision differs from the replica that stopped there")
	}

	tests := []struct {
		name string
		op   func(t *testing.T, s *Store)
	}{
		{"different value", func(t *testing.T, s *Store) { put(t, s, "x", "1") }},
		{"different key", func(t *testing.T, s *Store) { put(t, s, "y", "0") }},
		{"delete instead of put", func(t *testing.T, s *Store) { put(t, s, "x", "0"); del(t, s, "x", "") }},
	}
	base := func(t *testing.T) *Store {
		s := New()
		sampleOps(t, s)
		put(t, s, "x", "0")
		return s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			sampleOps(t, s)
			tt.op(t, s)
			if hashOf(t, s, 0) == hashOf(t, base(t), 0) {
				t.Fatal("different histories, same hash")
			}
		})
	}

	_, _, _, err = a.HashKV(a.Rev() + 1)
	wantErr(t, err, ErrFutureRev)
	_, _, _, err = a.HashKV(4)
	wantErr(t, err, ErrCompacted)
}
