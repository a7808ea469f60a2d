package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// One cluster serves the read/write API tests; each test uses its own keys.
func TestStoreAPI(t *testing.T) {
	c := newTestCluster(t, 3)

	t.Run("WritesThroughEveryReplicaAreReadEverywhere", func(t *testing.T) {
		ctx := ctxT(t)
		for i := range c.servers {
			cli := c.client(i)
			if _, err := cli.Put(ctx, fmt.Sprintf("api/w/%d", i), fmt.Sprintf("v%d", i)); err != nil {
				t.Fatalf("put via s%d: %v", i+1, err)
			}
		}
		for i := range c.servers {
			resp, err := c.client(i).Get(ctx, "api/w/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 3 {
				t.Fatalf("linearizable get via s%d saw %d keys, want 3", i+1, len(resp.Kvs))
			}
		}
	})

	t.Run("ReadYourWritesOnFollowers", func(t *testing.T) {
		ctx := ctxT(t)
		leader := c.waitLeader()
		follower := (leader + 1) % 3
		lc, fc := c.client(leader), c.client(follower)
		for i := 0; i < 50; i++ {
			put, err := lc.Put(ctx, "api/ryw", fmt.Sprint(i))
			if err != nil {
				t.Fatal(err)
			}
			get, err := fc.Get(ctx, "api/ryw")
			if err != nil {
				t.Fatal(err)
			}
			if get.Kvs[0].ModRevision < put.Header.Revision {
				t.Fatalf("follower read returned revision %d after a write at %d", get.Kvs[0].ModRevision, put.Header.Revision)
			}
		}
	})

	t.Run("RangeOptions", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		for _, k := range []string{"c", "a", "b", "d"} {
			if _, err := cli.Put(ctx, "api/r/"+k, "val-"+k); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := cli.Get(ctx, "api/r/", clientv3.WithPrefix(), clientv3.WithLimit(2), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.More || resp.Count != 4 || len(resp.Kvs) != 2 || string(resp.Kvs[0].Key) != "api/r/d" {
			t.Fatalf("limit+sort: more=%v count=%d kvs=%v", resp.More, resp.Count, resp.Kvs)
		}
		resp, err = cli.Get(ctx, "api/r/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 4 || len(resp.Kvs) != 0 {
			t.Fatalf("count only: %v %v", resp, err)
		}
		resp, err = cli.Get(ctx, "api/r/a", clientv3.WithKeysOnly(), clientv3.WithSerializable())
		if err != nil || len(resp.Kvs) != 1 || len(resp.Kvs[0].Value) != 0 {
			t.Fatalf("keys only: %v %v", resp, err)
		}
		resp, err = cli.Get(ctx, "api/r/b", clientv3.WithRange("api/r/d"))
		if err != nil || len(resp.Kvs) != 2 {
			t.Fatalf("range [b,d): %v %v", resp, err)
		}
	})

	t.Run("TxnComparesAndNestedOps", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		put, err := cli.Put(ctx, "api/txn/k", "v1")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Txn(ctx).If(
			clientv3.Compare(clientv3.Value("api/txn/k"), "=", "v1"),
			clientv3.Compare(clientv3.ModRevision("api/txn/k"), "=", put.Header.Revision),
			clientv3.Compare(clientv3.Version("api/txn/k"), ">", 0),
		).Then(
			clientv3.OpPut("api/txn/k", "v2"),
			clientv3.OpGet("api/txn/k"),
			clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("api/txn/nested", "n")}, nil),
		).Else(clientv3.OpPut("api/txn/k", "wrong")).Commit()
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Succeeded {
			t.Fatal("txn compares failed")
		}
		got := resp.Responses[1].GetResponseRange().Kvs[0]
		if string(got.Value) != "v2" {
			t.Fatalf("range inside txn saw %q, want the txn's own write v2", got.Value)
		}
		g, _ := cli.Get(ctx, "api/txn/nested")
		if len(g.Kvs) != 1 {
			t.Fatal("nested txn put missing")
		}
		resp, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision("api/txn/absent"), "!=", 0)).
			Else(clientv3.OpGet("api/txn/k")).Commit()
		if err != nil || resp.Succeeded {
			t.Fatalf("failure branch: %v %v", resp, err)
		}
		_, err = cli.Txn(ctx).Then(clientv3.OpPut("api/txn/dup", "a"), clientv3.OpPut("api/txn/dup", "b")).Commit()
		if !errors.Is(err, rpctypes.ErrDuplicateKey) {
			t.Fatalf("duplicate key in txn: %v", err)
		}
	})

	t.Run("CompactionRefusesOldRevisions", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		first, _ := cli.Put(ctx, "api/compact", "1")
		second, _ := cli.Put(ctx, "api/compact", "2")
		if _, err := cli.Compact(ctx, second.Header.Revision); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Get(ctx, "api/compact", clientv3.WithRev(first.Header.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
			t.Fatalf("read at compacted revision: %v, want ErrCompacted", err)
		}
		resp, err := cli.Get(ctx, "api/compact", clientv3.WithRev(second.Header.Revision))
		if err != nil || string(resp.Kvs[0].Value) != "2" {
			t.Fatalf("read at compact revision: %v %v", resp, err)
		}
		if _, err := cli.Get(ctx, "api/compact", clientv3.WithRev(second.Header.Revision+1_000_000)); !errors.Is(err, rpctypes.ErrFutureRev) {
			t.Fatalf("future revision: %v", err)
		}
		w := cli.Watch(ctx, "api/compact", clientv3.WithRev(first.Header.Revision))
		wr := <-w
		if wr.CompactRevision != second.Header.Revision {
			t.Fatalf("watch from compacted revision: compact_revision=%d err=%v, want %d", wr.CompactRevision, wr.Err(), second.Header.Revision)
		}
	})

	t.Run("PutOptions", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		cli.Put(ctx, "api/put", "a")
		resp, err := cli.Put(ctx, "api/put", "b", clientv3.WithPrevKV())
		if err != nil || resp.PrevKv == nil || string(resp.PrevKv.Value) != "a" {
			t.Fatalf("prev_kv: %v %v", resp, err)
		}
		if _, err := cli.Put(ctx, "api/put-missing", "", clientv3.WithIgnoreValue()); !errors.Is(err, rpctypes.ErrKeyNotFound) {
			t.Fatalf("ignore_value on missing key: %v", err)
		}
		if _, err := cli.Put(ctx, "api/put", "", clientv3.WithIgnoreValue()); err != nil {
			t.Fatal(err)
		}
		g, _ := cli.Get(ctx, "api/put")
		if string(g.Kvs[0].Value) != "b" || g.Kvs[0].Version != 3 {
			t.Fatalf("after ignore_value: %q version %d", g.Kvs[0].Value, g.Kvs[0].Version)
		}
		d, err := cli.Delete(ctx, "api/put", clientv3.WithPrevKV())
		if err != nil || d.Deleted != 1 || string(d.PrevKvs[0].Value) != "b" {
			t.Fatalf("delete prev_kv: %v %v", d, err)
		}
		if _, err := cli.Put(ctx, "api/put", "x", clientv3.WithLease(12345)); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			t.Fatalf("put with unknown lease: %v", err)
		}
	})

	t.Run("RequestTooLargeIsRefused", func(t *testing.T) {
		_, err := c.client().Put(ctxT(t), "api/big", strings.Repeat("x", DefaultMaxRequestBytes+1))
		if !errors.Is(err, rpctypes.ErrRequestTooLarge) {
			t.Fatalf("oversized put: %v, want ErrRequestTooLarge", err)
		}
	})

	t.Run("WatchReplaysThenStreamsLive", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		first, _ := cli.Put(ctx, "api/watch/a", "1")
		cli.Put(ctx, "api/watch/b", "2")
		cli.Delete(ctx, "api/watch/a")
		w := c.client(1).Watch(ctx, "api/watch/", clientv3.WithPrefix(), clientv3.WithRev(first.Header.Revision), clientv3.WithPrevKV())
		go cli.Put(ctx, "api/watch/c", "3")
		var events []*clientv3.Event
		for len(events) < 4 {
			wr := <-w
			if err := wr.Err(); err != nil {
				t.Fatal(err)
			}
			events = append(events, wr.Events...)
		}
		want := []struct {
			typ mvccpb.Event_EventType
			key string
		}{{mvccpb.PUT, "api/watch/a"}, {mvccpb.PUT, "api/watch/b"}, {mvccpb.DELETE, "api/watch/a"}, {mvccpb.PUT, "api/watch/c"}}
		for i, ev := range events {
			if ev.Type != want[i].typ || string(ev.Kv.Key) != want[i].key {
				t.Fatalf("event %d = %v %s, want %v %s", i, ev.Type, ev.Kv.Key, want[i].typ, want[i].key)
			}
		}
		if events[2].PrevKv == nil || string(events[2].PrevKv.Value) != "1" {
			t.Fatalf("delete event lacks prev_kv: %v", events[2].PrevKv)
		}
	})

	t.Run("WatchSwitchingReplicasLosesNothing", func(t *testing.T) {
		ctx := ctxT(t)
		writer := c.client()
		const total = 200
		head, err := writer.Get(ctx, "api/switch")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < total; i++ {
				writer.Put(ctx, "api/switch", fmt.Sprint(i))
			}
		}()
		var seen []string
		next := int64(0)
		clients := []*clientv3.Client{c.client(0), c.client(1), c.client(2)}
		rounds := 0
		for replica := 0; len(seen) < total; replica = (replica + 1) % 3 {
			if rounds++; rounds > 100 {
				t.Fatalf("no progress after %d watch rounds: saw %d events", rounds, len(seen))
			}
			opts := []clientv3.OpOption{}
			if next > 0 {
				opts = append(opts, clientv3.WithRev(next))
			} else {
				opts = append(opts, clientv3.WithRev(head.Header.Revision+1))
			}
			wctx, cancel := context.WithCancel(ctx)
			w := clients[replica].Watch(wctx, "api/switch", opts...)
			got := 0
			for wr := range w {
				if err := wr.Err(); err != nil {
					t.Fatalf("watch via s%d: %v", replica+1, err)
				}
				for _, ev := range wr.Events {
					seen = append(seen, string(ev.Kv.Value))
					next = ev.Kv.ModRevision + 1
				}
				got += len(wr.Events)
				if got >= 30 || len(seen) >= total {
					break
				}
			}
			cancel()
		}
		<-done
		for i, v := range seen[:total] {
			if v != fmt.Sprint(i) {
				t.Fatalf("event %d carried %q: events were lost, duplicated or reordered across replicas", i, v)
			}
		}
	})

	t.Run("WatchFiltersAndProgress", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		w := cli.Watch(ctx, "api/filter", clientv3.WithFilterPut())
		cli.Put(ctx, "api/filter", "x")
		cli.Delete(ctx, "api/filter")
		wr := <-w
		if len(wr.Events) != 1 || wr.Events[0].Type != mvccpb.DELETE {
			t.Fatalf("NOPUT filter delivered %v", wr.Events)
		}
		if err := cli.RequestProgress(ctx); err != nil {
			t.Fatal(err)
		}
		wr = <-w
		if !wr.IsProgressNotify() || wr.Header.Revision < c.servers[0].fsm.store.Rev()-5 {
			t.Fatalf("progress response: %+v", wr)
		}
	})

	t.Run("StatusAndHashKVAgree", func(t *testing.T) {
		ctx := ctxT(t)
		cli := c.client()
		put, _ := cli.Put(ctx, "api/hash", "x")
		var hashes []uint32
		for i := range c.servers {
			cli.Get(ctx, "api/hash") // linearizable: every replica has applied put
			st, err := c.client(i).Status(ctx, "https://"+c.stores[i])
			if err != nil {
				t.Fatal(err)
			}
			if st.Leader == 0 || st.Version == "" || st.DbSize == 0 {
				t.Fatalf("status from s%d: %+v", i+1, st)
			}
			waitFor(t, func() bool { return c.servers[i].fsm.store.Rev() >= put.Header.Revision })
			h, err := c.client(i).HashKV(ctx, "https://"+c.stores[i], put.Header.Revision)
			if err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, h.Hash)
		}
		if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
			t.Fatalf("HashKV differs between replicas: %v", hashes)
		}
	})

	t.Run("MemberListShowsNames", func(t *testing.T) {
		var list *clientv3.MemberListResponse
		waitFor(t, func() bool {
			var err error
			list, err = c.client().MemberList(ctxT(t))
			if err != nil {
				return false
			}
			for _, m := range list.Members {
				if m.Name == "" || len(m.ClientURLs) == 0 {
					return false
				}
			}
			return true
		})
		if len(list.Members) != 3 {
			t.Fatalf("%d members", len(list.Members))
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 10s")
}

func TestWatchStreamFeatures(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.WatchProgressNotifyInterval = 200 * time.Millisecond })
	ctx := ctxT(t)
	cli := c.client(1)

	t.Run("ManyWatchesOnOneStreamAndCancel", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		a := cli.Watch(wctx, "multi/a")
		b := cli.Watch(ctx, "multi/b")
		cli.Put(ctx, "multi/a", "1")
		cli.Put(ctx, "multi/b", "2")
		if wr := <-a; len(wr.Events) != 1 || string(wr.Events[0].Kv.Key) != "multi/a" {
			t.Fatalf("watch a: %+v", wr)
		}
		if wr := <-b; len(wr.Events) != 1 || string(wr.Events[0].Kv.Key) != "multi/b" {
			t.Fatalf("watch b: %+v", wr)
		}
		cancel()
		cli.Put(ctx, "multi/a", "3")
		cli.Put(ctx, "multi/b", "4")
		if wr := <-b; len(wr.Events) != 1 || string(wr.Events[0].Kv.Value) != "4" {
			t.Fatalf("watch b after canceling a: %+v", wr)
		}
		for wr := range a {
			if len(wr.Events) > 0 {
				t.Fatalf("canceled watch delivered %v", wr.Events)
			}
		}
	})

	t.Run("ProgressNotify", func(t *testing.T) {
		put, _ := cli.Put(ctx, "progress/x", "1")
		w := cli.Watch(ctx, "progress/none", clientv3.WithProgressNotify())
		deadline := time.After(5 * time.Second)
		for {
			select {
			case wr := <-w:
				if wr.IsProgressNotify() {
					if wr.Header.Revision < put.Header.Revision {
						t.Fatalf("progress at %d, behind revision %d", wr.Header.Revision, put.Header.Revision)
					}
					return
				}
			case <-deadline:
				t.Fatal("no progress notification within 5s at a 200ms interval")
			}
		}
	})

	t.Run("UnsupportedCallsAreUnimplemented", func(t *testing.T) {
		_, err := cli.Auth.AuthStatus(ctx)
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("auth status: %v, want Unimplemented", err)
		}
		if _, err := cli.Defragment(ctx, "https://"+c.stores[1]); err != nil {
			t.Fatalf("defragment: %v", err)
		}
	})
}
