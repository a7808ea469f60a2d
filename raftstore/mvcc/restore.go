package mvcc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// maxSnapRecord bounds one record's length, so a corrupt length cannot make
// Restore allocate without limit.
const maxSnapRecord = 64 << 20

// Restore replaces the whole state with a snapshot written by
// Snapshot.WriteTo. The stream is read and checked completely first: a
// truncated or corrupt one returns an error wrapping ErrCorruptSnapshot and
// leaves the store as it was. Open watchers carry on from where they were,
// replaying from the restored history, or get a CompactRevision response if
// it no longer holds their position.
//
// If r is an io.ByteReader (a *bufio.Reader, say) Restore reads exactly the
// snapshot's bytes from it, so a caller can embed the snapshot in a larger
// stream; otherwise it may read ahead.
func (s *Store) Restore(r io.Reader) error {
	st, err := readSnapshot(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oldRev := s.rev.Load()
	s.index = st.index
	s.log = st.log
	s.leases = st.leases
	// The new keyHists were built with gen 0 and nothing else holds them.
	s.gen = 0
	s.rev.Store(st.rev)
	s.compactRev.Store(st.compactRev)
	s.size.Store(st.size)
	s.keyCount.Store(st.keyCount)
	s.hub.unsafeResetAll(oldRev)
	return nil
}

// restored is a state decoded from a snapshot, not yet swapped in.
type restored struct {
	index      *btree.BTreeG[*keyHist]
	log        revLog
	leases     map[int64]*lease
	rev        int64
	compactRev int64
	size       int64
	keyCount   int64
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
}

func readSnapshot(r io.Reader) (*restored, error) {
	src, ok := r.(byteReader)
	if !ok {
		src = bufio.NewReaderSize(r, 64<<10)
	}
	sr := &snapReader{src: src}
	st, err := sr.decode()
	switch {
	case err == nil:
		return st, nil
	case sr.readErr != nil:
		return nil, fmt.Errorf("mvcc: restore: read snapshot: %w", sr.readErr)
	case errors.Is(err, ErrCorruptSnapshot):
		return nil, err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, corrupt("truncated")
	}
	return nil, corrupt("%v", err)
}

type byteReader interface {
	io.Reader
	io.ByteReader
}

// snapReader decodes the format and checksums the bytes it consumes.
type snapReader struct {
	src byteReader
	crc uint32
	one [1]byte
	// readErr is a failure of the source itself, as opposed to a stream
	// that ends early or decodes badly.
	readErr error
}

func (sr *snapReader) ReadByte() (byte, error) {
	b, err := sr.src.ReadByte()
	if err != nil {
		return 0, sr.fail(err)
	}
	sr.one[0] = b
	sr.crc = crc32.Update(sr.crc, crcTable(), sr.one[:])
	return b, nil
}

func (sr *snapReader) readFull(p []byte) error {
	if _, err := io.ReadFull(sr.src, p); err != nil {
		return sr.fail(err)
	}
	sr.crc = crc32.Update(sr.crc, crcTable(), p)
	return nil
}

func (sr *snapReader) fail(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return io.ErrUnexpectedEOF
	}
	sr.readErr = err
	return err
}

func (sr *snapReader) uvarint() (int64, error) {
	v, err := binary.ReadUvarint(sr)
	if err == nil && v > 1<<62 {
		return 0, corrupt("integer %d out of range", v)
	}
	return int64(v), err
}

func (sr *snapReader) decode() (*restored, error) {
	magic := make([]byte, len(snapMagic))
	if err := sr.readFull(magic); err != nil {
		return nil, err
	}
	if string(magic) != snapMagic {
		return nil, corrupt("not a store snapshot")
	}
	version, err := sr.uvarint()
	if err != nil {
		return nil, err
	}
	if version != snapVersion {
		return nil, corrupt("unsupported format version %d", version)
	}
	st := &restored{index: newIndex(), leases: map[int64]*lease{}}
	if st.rev, err = sr.uvarint(); err != nil {
		return nil, err
	}
	if st.compactRev, err = sr.uvarint(); err != nil {
		return nil, err
	}
	if st.rev < 1 || st.compactRev > st.rev {
		return nil, corrupt("revision %d, compact revision %d", st.rev, st.compactRev)
	}
	if err := sr.decodeLeases(st); err != nil {
		return nil, err
	}
	hists, err := sr.decodeRecords(st)
	if err != nil {
		return nil, err
	}
	want := sr.crc
	var sum [4]byte
	if _, err := io.ReadFull(sr.src, sum[:]); err != nil {
		return nil, sr.fail(err)
	}
	if binary.BigEndian.Uint32(sum[:]) != want {
		return nil, corrupt("checksum mismatch")
	}
	return st, st.build(hists)
}

func (sr *snapReader) decodeLeases(st *restored) error {
	n, err := sr.uvarint()
	if err != nil {
		return err
	}
	var last int64
	for i := int64(0); i < n; i++ {
		id, err := binary.ReadVarint(sr)
		if err != nil {
			return err
		}
		ttl, err := binary.ReadVarint(sr)
		if err != nil {
			return err
		}
		if id == 0 || (i > 0 && id <= last) {
			return corrupt("lease %d out of order", id)
		}
		last = id
		st.leases[id] = &lease{id: id, ttl: ttl, keys: map[string]struct{}{}}
	}
	return nil
}

// decodeRecords reads the records up to the end marker and groups them by
// key, checking their order.
func (sr *snapReader) decodeRecords(st *restored) ([]*keyHist, error) {
	var (
		hists []*keyHist
		cur   *keyHist
		count int64
		buf   []byte
	)
	for {
		tag, err := sr.ReadByte()
		if err != nil {
			return nil, err
		}
		switch tag {
		case tagEnd:
			n, err := sr.uvarint()
			if err != nil {
				return nil, err
			}
			if n != count {
				return nil, corrupt("%d records, end marker says %d", count, n)
			}
			return hists, nil
		case tagRecord:
		default:
			return nil, corrupt("unknown record tag %d", tag)
		}
		sub, err := sr.uvarint()
		if err != nil {
			return nil, err
		}
		size, err := sr.uvarint()
		if err != nil {
			return nil, err
		}
		if size > maxSnapRecord {
			return nil, corrupt("record of %d bytes", size)
		}
		buf = slices.Grow(buf[:0], int(size))[:size]
		if err := sr.readFull(buf); err != nil {
			return nil, err
		}
		kv := &mvccpb.KeyValue{}
		if err := proto.Unmarshal(buf, kv); err != nil {
			return nil, corrupt("record %d: %v", count, err)
		}
		if err := st.checkRecord(kv); err != nil {
			return nil, err
		}
		switch {
		case cur != nil && bytes.Equal(kv.Key, cur.key):
			if kv.ModRevision <= cur.revs[len(cur.revs)-1].kv.ModRevision {
				return nil, corrupt("key %q: revisions out of order", kv.Key)
			}
			kv.Key = cur.key
		case cur != nil && bytes.Compare(kv.Key, cur.key) < 0:
			return nil, corrupt("key %q out of order", kv.Key)
		default:
			cur = &keyHist{key: kv.Key}
			hists = append(hists, cur)
		}
		cur.revs = append(cur.revs, rec{kv: kv, sub: sub})
		st.size += recSize(kv.Key, kv.Value)
		count++
	}
}

func (st *restored) checkRecord(kv *mvccpb.KeyValue) error {
	switch {
	case len(kv.Key) == 0:
		return corrupt("record without a key")
	case kv.ModRevision < 1 || kv.ModRevision > st.rev:
		return corrupt("key %q: revision %d outside [1, %d]", kv.Key, kv.ModRevision, st.rev)
	case kv.CreateRevision == 0 && (kv.Version != 0 || len(kv.Value) != 0 || kv.Lease != 0):
		return corrupt("key %q: tombstone with data", kv.Key)
	case kv.CreateRevision != 0 && (kv.CreateRevision > kv.ModRevision || kv.Version < 1):
		return corrupt("key %q: bad create revision or version", kv.Key)
	}
	return nil
}

// build derives the index, log, lease attachments and counters from the
// decoded histories.
func (st *restored) build(hists []*keyHist) error {
	type ordered struct {
		rev Revision
		ent logEnt
	}
	var changes []ordered
	for _, h := range hists {
		st.index.ReplaceOrInsert(h)
		if kv := h.latest(); kv != nil {
			st.keyCount++
			if kv.Lease != 0 {
				l := st.leases[kv.Lease]
				if l == nil {
					return corrupt("key %q: lease %d not in snapshot", kv.Key, kv.Lease)
				}
				l.keys[string(h.key)] = struct{}{}
			}
		}
		for i, r := range h.revs {
			if r.kv.ModRevision < st.compactRev {
				continue
			}
			var prev *mvccpb.KeyValue
			if i > 0 && !h.revs[i-1].tombstone() {
				prev = h.revs[i-1].kv
			}
			changes = append(changes, ordered{rev: r.rev(), ent: logEnt{kv: r.kv, prev: prev}})
		}
	}
	slices.SortFunc(changes, func(a, b ordered) int { return a.rev.compare(b.rev) })
	for i, c := range changes {
		if i > 0 && c.rev == changes[i-1].rev {
			return corrupt("revision %d.%d used twice", c.rev.Main, c.rev.Sub)
		}
		st.log.append(c.ent)
	}
	return nil
}
