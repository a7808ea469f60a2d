package storage

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lease reuse, as Kubernetes does for events: objects created close
// together share one lease instead of costing a lease each. A lease is
// granted for ttl plus a reuse period (5% of ttl, at most a minute) and
// taken by later objects while it still outlives their ttl, so each object
// lives at least its ttl and at most ttl plus the reuse period (rounded up
// to whole seconds).
const (
	leaseReuseFraction = 0.05
	maxLeaseReuse      = time.Minute
)

// leaseManager hands out leases for objects created with a TTL.
type leaseManager struct {
	lease clientv3.Lease
	now   func() time.Time

	mu      sync.Mutex
	id      clientv3.LeaseID
	ttl     int64     // the TTL the current lease serves
	expires time.Time // when the current lease ends, as granted
}

func newLeaseManager(l clientv3.Lease) *leaseManager {
	return &leaseManager{lease: l, now: time.Now}
}

// get returns a lease that outlives ttlSeconds from now.
func (m *leaseManager) get(ctx context.Context, ttlSeconds int64) (clientv3.LeaseID, error) {
	if m.lease == nil {
		return 0, errors.New("storage: objects with a TTL need Backend.Lease")
	}
	now := m.now()
	ttl := time.Duration(ttlSeconds) * time.Second
	reuse := min(time.Duration(float64(ttl)*leaseReuseFraction), maxLeaseReuse)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id != 0 && m.ttl == ttlSeconds && !m.expires.Before(now.Add(ttl)) && !m.expires.After(now.Add(ttl+reuse)) {
		return m.id, nil
	}
	grant := int64(math.Ceil((ttl + reuse).Seconds()))
	resp, err := m.lease.Grant(ctx, grant)
	if err != nil {
		return 0, storeError(err)
	}
	m.id, m.ttl, m.expires = resp.ID, ttlSeconds, now.Add(time.Duration(grant)*time.Second)
	return m.id, nil
}

// forget drops a lease the store no longer knows (revoked, or expired
// early), so the next get grants a new one.
func (m *leaseManager) forget(id clientv3.LeaseID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id == id {
		m.id = 0
	}
}
