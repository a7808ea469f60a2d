package mvcc

import (
	"bytes"
	"cmp"
	"slices"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Lease is a granted lease: ID, TTL in seconds (as granted) and the keys
// attached now (sorted).
type Lease struct {
	ID, TTL int64
	Keys    [][]byte
}

// lease is the store's record of a granted lease. keys is a set only ever
// read in sorted form, so map order never leaks into results.
type lease struct {
	id, ttl int64
	keys    map[string]struct{}
}

func (l *lease) export() Lease {
	out := Lease{ID: l.id, TTL: l.ttl, Keys: make([][]byte, 0, len(l.keys))}
	for k := range l.keys {
		out.Keys = append(out.Keys, []byte(k))
	}
	slices.SortFunc(out.Keys, bytes.Compare)
	return out
}

// LeaseGrant records a lease. The caller picks the ID (non-zero) before the
// command enters the log, and tracks expiry itself: the store only keeps the
// TTL as granted. Granting creates no revision.
func (s *Store) LeaseGrant(id, ttl int64) error {
	if id == 0 {
		return ErrInvalidLeaseID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.leases[id]; ok {
		return ErrLeaseExists
	}
	s.leases[id] = &lease{id: id, ttl: ttl, keys: map[string]struct{}{}}
	return nil
}

// LeaseRevoke removes a lease and deletes every key attached to it, all in
// one revision (none if no key is attached).
func (s *Store) LeaseRevoke(id int64) (*etcdserverpb.LeaseRevokeResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[id]
	if !ok {
		return nil, ErrLeaseNotFound
	}
	// Sorted so that every replica assigns the same sub revisions.
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w := s.unsafeBeginWrite()
	for _, k := range keys {
		if h := s.unsafeLookup([]byte(k)); h != nil {
			w.del(h)
		}
	}
	delete(s.leases, id)
	return &etcdserverpb.LeaseRevokeResponse{Header: header(w.end())}, nil
}

// Leases returns every granted lease, sorted by ID.
func (s *Store) Leases() []Lease {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Lease, 0, len(s.leases))
	for _, l := range s.leases {
		out = append(out, l.export())
	}
	slices.SortFunc(out, func(a, b Lease) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Lease returns one lease and whether it exists.
func (s *Store) Lease(id int64) (Lease, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.leases[id]
	if !ok {
		return Lease{}, false
	}
	return l.export(), true
}

// unsafeAttach records that key now belongs to lease id (0: no lease).
func (s *Store) unsafeAttach(id int64, key []byte) {
	if l := s.leases[id]; l != nil {
		l.keys[string(key)] = struct{}{}
	}
}

// unsafeDetach records that key no longer belongs to lease id.
func (s *Store) unsafeDetach(id int64, key []byte) {
	if l := s.leases[id]; l != nil {
		delete(l.keys, string(key))
	}
}
