package apiserver

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"cairn/apiserver/storage"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultEndpointLeaseTTL is how long the kubernetes service keeps
// listing an API server that stopped renewing its lease, as Kubernetes'
// lease endpoint reconciler keeps it.
const DefaultEndpointLeaseTTL = 15 * time.Second

// apiServerLeasePrefix holds one key per live API server, named and
// valued by its advertised address (10.0.0.1:6443), under a store lease
// the server renews. The key goes when the lease expires, so the keys
// are the live API servers.
const apiServerLeasePrefix = "/registry/apiserverleases/"

// endpointLease is this API server's key under apiServerLeasePrefix and
// the store lease that keeps it. It is used by one goroutine.
type endpointLease struct {
	kv       clientv3.KV
	leases   clientv3.Lease
	endpoint netip.AddrPort
	ttl      int64 // seconds
	id       clientv3.LeaseID
}

func newEndpointLease(b storage.Backend, endpoint netip.AddrPort, ttl time.Duration) *endpointLease {
	return &endpointLease{kv: b.KV, leases: b.Lease, endpoint: endpoint, ttl: int64(math.Ceil(ttl.Seconds()))}
}

func (l *endpointLease) key() string { return apiServerLeasePrefix + l.endpoint.String() }

// renew restarts the lease's TTL, or grants a new lease and writes the
// key under it the first time and after the lease expired (the server
// was cut off from the store for longer than the TTL). A key someone
// deleted under a live lease is written again.
func (l *endpointLease) renew(ctx context.Context) error {
	if l.id != 0 {
		_, err := l.leases.KeepAliveOnce(ctx, l.id)
		if err == nil {
			return l.putIfMissing(ctx)
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
		l.id = 0
	}
	resp, err := l.leases.Grant(ctx, l.ttl)
	if err != nil {
		return err
	}
	l.id = resp.ID
	return l.put(ctx)
}

// put writes the key under the current lease.
func (l *endpointLease) put(ctx context.Context) error {
	_, err := l.kv.Put(ctx, l.key(), l.endpoint.String(), clientv3.WithLease(l.id))
	return err
}

func (l *endpointLease) putIfMissing(ctx context.Context) error {
	resp, err := l.kv.Get(ctx, l.key(), clientv3.WithCountOnly())
	if err != nil || resp.Count > 0 {
		return err
	}
	return l.put(ctx)
}

// revoke ends the lease, which deletes the key.
func (l *endpointLease) revoke(ctx context.Context) error {
	if l.id == 0 {
		return nil
	}
	_, err := l.leases.Revoke(ctx, l.id)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		err = nil
	}
	l.id = 0
	return err
}

// liveAPIServers returns the addresses of the API servers whose lease is
// alive, sorted by port then address. The read is linearizable: a stale
// one could drop a server that just renewed.
func liveAPIServers(ctx context.Context, kv clientv3.KV) ([]netip.AddrPort, error) {
	resp, err := kv.Get(ctx, apiServerLeasePrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for _, item := range resp.Kvs {
		ap, err := netip.ParseAddrPort(strings.TrimPrefix(string(item.Key), apiServerLeasePrefix))
		if err != nil {
			continue // not written by an API server; nothing to list
		}
		out = append(out, ap)
	}
	sortEndpoints(out)
	return out, nil
}

// sortEndpoints orders API server addresses by port, then address.
func sortEndpoints(eps []netip.AddrPort) {
	slices.SortFunc(eps, func(a, b netip.AddrPort) int {
		if a.Port() != b.Port() {
			return int(a.Port()) - int(b.Port())
		}
		return a.Addr().Compare(b.Addr())
	})
}
