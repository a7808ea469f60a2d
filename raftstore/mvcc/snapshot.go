package mvcc

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"io"
	"slices"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"
)

// Snapshot format, version 1. Every integer is a varint (encoding/binary);
// the stream is self-delimiting, so it can be embedded in a larger one.
//
//	magic     "CAIRNMVC"
//	version   uvarint, 1
//	rev       uvarint, the store revision
//	compact   uvarint, the compact revision
//	leases    uvarint count, then per lease (by ID): varint ID, varint TTL
//	records   per kept revision, by key then revision:
//	          byte 1, uvarint sub, uvarint length, mvccpb.KeyValue protobuf
//	          (a tombstone holds only Key and ModRevision)
//	end       byte 0, uvarint record count
//	checksum  4 bytes, big-endian CRC-32C of everything before it
const (
	snapMagic   = "CAIRNMVC"
	snapVersion = 1
	tagEnd      = 0
	tagRecord   = 1
)

// Snapshot is an immutable view of the whole store at one revision. Taking
// it is cheap (the index is shared copy-on-write), and it can be written out
// while the store goes on applying writes.
type Snapshot struct {
	index      *btree.BTreeG[*keyHist]
	rev        int64
	compactRev int64
	leases     []leaseTTL
}

type leaseTTL struct{ id, ttl int64 }

// Snapshot returns a view of the current state.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unsafeSnapshot()
}

func (s *Store) unsafeSnapshot() *Snapshot {
	sn := &Snapshot{
		index:      s.index.Clone(),
		rev:        s.rev.Load(),
		compactRev: s.compactRev.Load(),
		leases:     make([]leaseTTL, 0, len(s.leases)),
	}
	for _, l := range s.leases {
		sn.leases = append(sn.leases, leaseTTL{id: l.id, ttl: l.ttl})
	}
	slices.SortFunc(sn.leases, func(a, b leaseTTL) int { return cmp.Compare(a.id, b.id) })
	// From now on every keyHist in the index may be shared with sn.
	s.gen++
	return sn
}

// Rev returns the store revision the snapshot was taken at.
func (sn *Snapshot) Rev() int64 { return sn.rev }

// WriteTo writes the snapshot as a self-delimiting, versioned, checksummed
// stream that Store.Restore reads back: every kept revision (tombstones
// included), the compact and current revisions, and the leases. The bytes
// are the same on every replica with the same state.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &crcWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	buf := []byte(snapMagic)
	buf = binary.AppendUvarint(buf, snapVersion)
	buf = binary.AppendUvarint(buf, uint64(sn.rev))
	buf = binary.AppendUvarint(buf, uint64(sn.compactRev))
	buf = binary.AppendUvarint(buf, uint64(len(sn.leases)))
	for _, l := range sn.leases {
		buf = binary.AppendVarint(buf, l.id)
		buf = binary.AppendVarint(buf, l.ttl)
	}
	if _, err := bw.Write(buf); err != nil {
		return cw.n, err
	}
	var (
		count uint64
		err   error
		pb    []byte
		mo    = proto.MarshalOptions{Deterministic: true}
	)
	sn.index.Ascend(func(h *keyHist) bool {
		for _, r := range h.revs {
			pb, err = mo.MarshalAppend(pb[:0], r.kv)
			if err != nil {
				return false
			}
			buf = append(buf[:0], tagRecord)
			buf = binary.AppendUvarint(buf, uint64(r.sub))
			buf = binary.AppendUvarint(buf, uint64(len(pb)))
			if _, err = bw.Write(buf); err != nil {
				return false
			}
			if _, err = bw.Write(pb); err != nil {
				return false
			}
			count++
		}
		return true
	})
	if err != nil {
		return cw.n, err
	}
	buf = append(buf[:0], tagEnd)
	buf = binary.AppendUvarint(buf, count)
	if _, err := bw.Write(buf); err != nil {
		return cw.n, err
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	n, err := w.Write(binary.BigEndian.AppendUint32(nil, cw.crc))
	return cw.n + int64(n), err
}

// crcTable is CRC-32C, which has hardware support on common CPUs; the
// standard library builds it once.
func crcTable() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// crcWriter counts and checksums what passes through it.
type crcWriter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, crcTable(), p[:n])
	return n, err
}
