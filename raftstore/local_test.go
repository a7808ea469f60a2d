package raftstore

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestLocalClientsServeTheEtcdAPIInProcess(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	// A follower's in-process clients, as a co-located API server uses them.
	follower := (c.waitLeader() + 1) % 3
	local := c.servers[follower].Local()
	quiet := clientv3.NewCtxClient(ctx, clientv3.WithZapLogger(zap.NewNop()))
	kv := clientv3.NewKVFromKVClient(local.KV, quiet)
	watcher := clientv3.NewWatchFromWatchClient(local.Watch, quiet)
	defer watcher.Close()
	lease := clientv3.NewLeaseFromLeaseClient(local.Lease, quiet, time.Second)
	defer lease.Close()

	w := watcher.Watch(ctx, "local/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	put, err := kv.Put(ctx, "local/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "local/a", "2"); err != nil {
		t.Fatal(err)
	}
	got, err := kv.Get(ctx, "local/a")
	if err != nil || string(got.Kvs[0].Value) != "2" {
		t.Fatalf("get: %v %v", got, err)
	}
	var events []*clientv3.Event
	for len(events) < 2 {
		wr := <-w
		if wr.Err() != nil {
			t.Fatal(wr.Err())
		}
		events = append(events, wr.Events...)
	}
	if events[0].Kv.ModRevision != put.Header.Revision || string(events[1].PrevKv.Value) != "1" {
		t.Fatalf("events: %v", events)
	}
	txn, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("local/a"), "=", put.Header.Revision)).
		Then(clientv3.OpPut("local/a", "stale")).Commit()
	if err != nil || txn.Succeeded {
		t.Fatalf("compare on a stale revision succeeded: %v %v", txn, err)
	}

	g, err := lease.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := lease.KeepAliveOnce(ctx, g.ID)
	if err != nil || ka.TTL != 5 {
		t.Fatalf("keepalive in process: %v %v", ka, err)
	}
	st, err := local.Maintenance.Status(ctx, nil)
	if err != nil || st.Leader == 0 {
		t.Fatalf("status in process: %v %v", st, err)
	}
}
