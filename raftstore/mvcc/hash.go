package mvcc

import (
	"encoding/binary"
	"hash/crc32"
)

// HashKV returns a CRC-32C over every kept revision <= rev (0: current):
// keys, values, revisions, create revisions, versions, leases and
// tombstones, in key then revision order. Replicas with the same history
// and compaction return the same hash; hashRev is the revision hashed and
// compactRev the store's compact revision.
//
// It hashes a Snapshot, so the store lock is held only to take it.
func (s *Store) HashKV(rev int64) (hash uint32, hashRev int64, compactRev int64, err error) {
	s.mu.Lock()
	cur, compact := s.rev.Load(), s.compactRev.Load()
	if rev == 0 {
		rev = cur
	}
	switch {
	case rev > cur:
		err = ErrFutureRev
	case rev < compact:
		err = ErrCompacted
	}
	if err != nil {
		s.mu.Unlock()
		return 0, 0, compact, err
	}
	sn := s.unsafeSnapshot()
	s.mu.Unlock()
	return sn.hash(rev), rev, compact, nil
}

// hash checksums the snapshot's records with Main <= rev.
func (sn *Snapshot) hash(rev int64) uint32 {
	tab := crcTable()
	var (
		crc uint32
		buf []byte
	)
	sn.index.Ascend(func(h *keyHist) bool {
		for _, r := range h.revs {
			kv := r.kv
			if kv.ModRevision > rev {
				break
			}
			buf = binary.AppendUvarint(buf[:0], uint64(len(kv.Key)))
			buf = append(buf, kv.Key...)
			buf = binary.AppendVarint(buf, kv.ModRevision)
			buf = binary.AppendVarint(buf, r.sub)
			buf = binary.AppendVarint(buf, kv.CreateRevision)
			buf = binary.AppendVarint(buf, kv.Version)
			buf = binary.AppendVarint(buf, kv.Lease)
			buf = binary.AppendUvarint(buf, uint64(len(kv.Value)))
			crc = crc32.Update(crc, tab, buf)
			crc = crc32.Update(crc, tab, kv.Value)
		}
		return true
	})
	return crc
}
