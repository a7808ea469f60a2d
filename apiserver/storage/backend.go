package storage

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// NewLocalBackend wraps the in-process etcd API clients of a co-located
// store replica (raftstore.Server.Local) as a Backend; closeFn releases
// the watch and lease streams.
//
// It hands clientv3 a context client for its logger: clientv3's watcher
// built around a nil client dereferences a nil logger when the store sends
// a response for a watch it has already cancelled.
func NewLocalBackend(kv pb.KVClient, w pb.WatchClient, l pb.LeaseClient) (b Backend, closeFn func()) {
	c := clientv3.NewCtxClient(context.Background())
	watcher := clientv3.NewWatchFromWatchClient(w, c)
	lease := clientv3.NewLeaseFromLeaseClient(l, c, time.Second)
	return Backend{KV: clientv3.NewKVFromKVClient(kv, c), Watcher: watcher, Lease: lease}, func() {
		watcher.Close()
		lease.Close()
		c.Close()
	}
}
