package apiserver

import (
	"context"

	"cairn/apiserver/storage"
	"cairn/raftstore"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LocalBackend reaches a store replica in the same process, without a
// network hop; closeFn releases its streams.
func LocalBackend(s *raftstore.Server) (b storage.Backend, closeFn func()) {
	local := s.Local()
	return storage.NewLocalBackend(local.KV, local.Watch, local.Lease)
}

// RemoteBackend reaches the store through an etcd client, for an API
// server run on its own (cairn apiserver --store-endpoints).
func RemoteBackend(cli *clientv3.Client) storage.Backend {
	return storage.Backend{KV: cli.KV, Watcher: cli.Watcher, Lease: cli.Lease}
}

// StoreReady is a readiness check: a linearizable read succeeds only
// while the store has a leader and a quorum.
func StoreReady(kv clientv3.KV) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := kv.Get(ctx, "/registry/readyz", clientv3.WithCountOnly())
		return err
	}
}
