package raftstore

import (
	"context"
	"math"
	"sync"
	"time"

	"cairn/raftstore/mvcc"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// MaxLeaseTTL is the largest TTL a lease may be granted with (etcd's limit).
const MaxLeaseTTL = 9_000_000_000

// lessor tracks lease deadlines on the leader. Deadlines are not
// replicated: a new leader gives every lease a full TTL again, as etcd
// does, and the leader revokes expired leases through Raft.
type lessor struct {
	s *Server

	mu       sync.Mutex
	primary  bool
	deadline map[int64]time.Time
	revoking map[int64]bool
}

func newLessor(s *Server) *lessor {
	return &lessor{s: s, deadline: map[int64]time.Time{}, revoking: map[int64]bool{}}
}

// minTTL keeps leases from expiring during a normal leader election.
func (l *lessor) minTTL() int64 {
	return int64(math.Ceil(3 * l.s.cfg.ElectionTimeout.Seconds()))
}

func (l *lessor) promote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = true
	l.deadline = map[int64]time.Time{}
	l.revoking = map[int64]bool{}
	now := time.Now()
	for _, le := range l.s.fsm.store.Leases() {
		l.deadline[le.ID] = now.Add(time.Duration(le.TTL) * time.Second)
	}
}

func (l *lessor) demote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = false
	l.deadline = map[int64]time.Time{}
}

// renew restarts a lease's TTL and returns it.
func (l *lessor) renew(id int64) (int64, error) {
	le, ok := l.s.fsm.store.Lease(id)
	if !ok {
		return 0, mvcc.ErrLeaseNotFound
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return 0, errNotReady
	}
	l.deadline[id] = time.Now().Add(time.Duration(le.TTL) * time.Second)
	return le.TTL, nil
}

// remaining returns the seconds left on a lease, or -1 if it is unknown.
func (l *lessor) remaining(id int64) int64 {
	le, ok := l.s.fsm.store.Lease(id)
	if !ok {
		return -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.deadline[id]
	if !ok {
		return le.TTL
	}
	left := int64(math.Ceil(time.Until(d).Seconds()))
	if left < 0 {
		left = 0
	}
	return left
}

// run revokes expired leases while this replica leads.
func (l *lessor) run() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.s.ctx.Done():
			return
		case <-t.C:
		}
		for _, id := range l.expired() {
			go l.revoke(id)
		}
	}
}

func (l *lessor) expired() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := time.Now()
	var out []int64
	live := map[int64]bool{}
	for _, le := range l.s.fsm.store.Leases() {
		live[le.ID] = true
		d, ok := l.deadline[le.ID]
		if !ok {
			// Granted since promotion: its clock starts now.
			l.deadline[le.ID] = now.Add(time.Duration(le.TTL) * time.Second)
			continue
		}
		if now.After(d) && !l.revoking[le.ID] {
			l.revoking[le.ID] = true
			out = append(out, le.ID)
		}
	}
	for id := range l.deadline {
		if !live[id] {
			delete(l.deadline, id)
			delete(l.revoking, id)
		}
	}
	return out
}

func (l *lessor) revoke(id int64) {
	ctx, cancel := context.WithTimeout(l.s.ctx, l.s.cfg.RequestTimeout)
	defer cancel()
	_, err := l.s.propose(ctx, cmdLeaseRevoke, &pb.LeaseRevokeRequest{ID: id})
	l.mu.Lock()
	delete(l.revoking, id)
	l.mu.Unlock()
	if err != nil && err != mvcc.ErrLeaseNotFound {
		l.s.log.Warn("revoking expired lease failed; will retry", "lease", id, "err", err)
	}
}
