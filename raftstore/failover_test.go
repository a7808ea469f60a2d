package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn/internal/pki"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestLeaseExpiresAndSurvivesLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cli := c.client()

	short, err := cli.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "lease/short", "x", clientv3.WithLease(short.ID)); err != nil {
		t.Fatal(err)
	}
	long, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	cli.Put(ctx, "lease/long", "y", clientv3.WithLease(long.ID))
	ttl, err := cli.TimeToLive(ctx, long.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 30 || len(ttl.Keys) != 1 || ttl.TTL <= 0 {
		t.Fatalf("TimeToLive: %+v %v", ttl, err)
	}
	if ka, err := cli.KeepAliveOnce(ctx, long.ID); err != nil || ka.TTL != 30 {
		t.Fatalf("keepalive: %+v %v", ka, err)
	}
	leases, err := cli.Leases(ctx)
	if err != nil || len(leases.Leases) != 2 {
		t.Fatalf("Leases: %+v %v", leases, err)
	}

	// The short lease expires on its own and takes its key.
	waitFor(t, func() bool {
		g, err := cli.Get(ctx, "lease/short")
		return err == nil && len(g.Kvs) == 0
	})

	// Kill the leader: the long lease must survive with a refreshed TTL.
	old := c.waitLeader()
	c.stop(old)
	rest := []int{(old + 1) % 3, (old + 2) % 3}
	c.waitLeader()
	cli2 := c.client(rest...)
	ttl, err = cli2.TimeToLive(ctx, long.ID)
	if err != nil || ttl.TTL < 20 {
		t.Fatalf("lease after failover: %+v %v", ttl, err)
	}
	g, err := cli2.Get(ctx, "lease/long")
	if err != nil || len(g.Kvs) != 1 {
		t.Fatalf("leased key lost in failover: %v %v", g, err)
	}
	if _, err := cli2.Revoke(ctx, long.ID); err != nil {
		t.Fatal(err)
	}
	g, _ = cli2.Get(ctx, "lease/long")
	if len(g.Kvs) != 0 {
		t.Fatal("revoke left the key")
	}
	if _, err := cli2.Revoke(ctx, long.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("second revoke: %v", err)
	}
}

func TestLeaderKillLosesNoAckedWrite(t *testing.T) {
	c := newTestCluster(t, 3)
	cli := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var acked sync.Map
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("kill/%d/%d", w, i)
				wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
				if _, err := cli.Put(wctx, key, key); err == nil {
					acked.Store(key, true)
					n.Add(1)
				}
				wcancel()
			}
		}(w)
	}
	waitFor(t, func() bool { return n.Load() > 200 })
	leader := c.waitLeader()
	c.stop(leader)
	c.waitLeader()
	before := n.Load()
	waitFor(t, func() bool { return n.Load() > before+200 })
	close(stop)
	wg.Wait()
	c.restart(leader)

	count := 0
	acked.Range(func(k, _ any) bool {
		g, err := cli.Get(ctx, k.(string))
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Kvs) != 1 {
			t.Errorf("acknowledged write %s lost after leader kill", k)
		}
		count++
		return true
	})
	t.Logf("%d acknowledged writes verified", count)
}

func TestRestartKeepsDataAndIdentityChecks(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cli := c.client()
	for i := 0; i < 20; i++ {
		cli.Put(ctx, fmt.Sprintf("restart/%d", i), "v")
	}
	// Stop every member, then start them all again.
	for i := range c.servers {
		c.stop(i)
	}
	// All at once: no single member can elect a leader alone.
	started := make([]*Server, len(c.servers))
	var wg sync.WaitGroup
	for i := range c.servers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := New(c.cfgs[i])
			if err != nil {
				t.Error(err)
			}
			started[i] = s
		}(i)
	}
	wg.Wait()
	copy(c.servers, started)
	if t.Failed() {
		t.FailNow()
	}
	c.waitLeader()
	g, err := c.client().Get(ctx, "restart/", clientv3.WithPrefix())
	if err != nil || len(g.Kvs) != 20 {
		t.Fatalf("after full restart: %v keys, err %v", len(g.Kvs), err)
	}

	t.Run("WrongNameRefused", func(t *testing.T) {
		cfg := c.cfgs[0]
		cfg.Name = "other"
		cfg.PeerListen, cfg.StoreListen = freeAddr(t), freeAddr(t)
		cfg.AdvertisePeer, cfg.AdvertiseStore = "", ""
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), `belongs to member "s1"`) {
			t.Fatalf("wrong --name: %v", err)
		}
	})
	t.Run("OtherClusterRefused", func(t *testing.T) {
		cfg := c.cfgs[0]
		cfg.PeerListen, cfg.StoreListen = freeAddr(t), freeAddr(t)
		cfg.InitialClusterToken = "another-cluster"
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
			t.Fatalf("data dir of another cluster: %v", err)
		}
	})
	t.Run("OtherCARefused", func(t *testing.T) {
		cfg := c.cfgs[0]
		cfg.PeerListen, cfg.StoreListen = freeAddr(t), freeAddr(t)
		cfg.CAFingerprint = "0123456789abcdef0123"
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "another cluster CA") {
			t.Fatalf("data dir under another CA: %v", err)
		}
	})
}

func TestClientFromAnotherCAIsRefused(t *testing.T) {
	c := newTestCluster(t, 1)
	other := filepath.Join(t.TempDir(), "other")
	if err := pki.Init(other); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := pki.ClientConfig(filepath.Join(c.pkiDir, "ca.crt"), filepath.Join(other, "admin.crt"), filepath.Join(other, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + c.stores[0]}, TLS: tlsCfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = cli.Put(ctx, "x", "y")
	}
	if err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
}

func TestMembershipThreeFiveThreeUnderLoad(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := c.client()

	var acked sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("member/%d/%d", w, i)
				if _, err := cli.Put(ctx, key, key); err == nil {
					acked.Store(key, true)
				}
			}
		}(w)
	}

	// Grow to five: s4 joins as a learner and is promoted, s5 as a voter.
	var added []*Server
	for i, learner := range []bool{true, false} {
		name := fmt.Sprintf("s%d", 4+i)
		cfg := c.memberConfig(name, freeAddr(t), freeAddr(t))
		cfg.Join = "https://" + c.stores[0]
		cfg.Learner = learner
		s, err := New(cfg)
		if err != nil {
			t.Fatalf("join %s: %v", name, err)
		}
		t.Cleanup(func() { s.Close() })
		added = append(added, s)
		if learner {
			// A learner is promoted once it has caught up; until then the
			// leader refuses, as etcd's does.
			var err error
			waitFor(t, func() bool {
				_, err = cli.MemberPromote(ctx, s.MemberID())
				if err != nil && !errors.Is(err, rpctypes.ErrMemberLearnerNotReady) {
					t.Fatalf("promote: %v", err)
				}
				return err == nil
			})
		}
	}
	list, err := cli.MemberList(ctx)
	if err != nil || len(list.Members) != 5 {
		t.Fatalf("after growing: %v %v", list, err)
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Fatalf("%s is still a learner", m.Name)
		}
	}
	// Shrink back to three by removing the two original followers.
	leader := c.waitLeader()
	removed := 0
	for i, s := range c.servers {
		if i == leader || removed == 2 {
			continue
		}
		if _, err := cli.MemberRemove(ctx, s.MemberID()); err != nil {
			t.Fatalf("remove s%d: %v", i+1, err)
		}
		select {
		case <-s.Removed():
		case <-time.After(10 * time.Second):
			t.Fatalf("s%d did not notice its removal", i+1)
		}
		c.stop(i)
		removed++
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	live := c.client(leader)
	list, err = live.MemberList(ctx)
	if err != nil || len(list.Members) != 3 {
		t.Fatalf("after shrinking: %v %v", list, err)
	}
	count := 0
	acked.Range(func(k, _ any) bool {
		g, err := live.Get(ctx, k.(string))
		if err != nil || len(g.Kvs) != 1 {
			t.Errorf("acknowledged write %s lost during membership changes (%v)", k, err)
		}
		count++
		return true
	})
	t.Logf("%d acknowledged writes verified", count)
	// The joined members hold the same state.
	put, _ := live.Put(ctx, "member/final", "x")
	for _, s := range added {
		waitFor(t, func() bool { return s.fsm.store.Rev() >= put.Header.Revision })
		h1, _, _, _ := s.fsm.store.HashKV(put.Header.Revision)
		h2, _, _, _ := c.servers[leader].fsm.store.HashKV(put.Header.Revision)
		if h1 != h2 {
			t.Fatal("joined member's state differs from the leader's")
		}
	}
}

func TestSnapshotSaveRestoreKeepsEveryKey(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cli := c.client()
	for i := 0; i < 100; i++ {
		cli.Put(ctx, fmt.Sprintf("snap/%03d", i), strings.Repeat("v", i))
	}
	cli.Delete(ctx, "snap/050")
	last, _ := cli.Put(ctx, "snap/last", "x")

	file := filepath.Join(t.TempDir(), "backup.snap")
	info, err := SaveSnapshot(ctx, cli, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 100 keys written here, plus the leadership fence key.
	if info.Revision != last.Header.Revision || info.KeyCount != 101 {
		t.Fatalf("snapshot info: %+v (want revision %d, 101 keys)", info, last.Header.Revision)
	}
	c.client(0).Get(ctx, "snap/last") // a linearizable read: s1 has applied everything
	hk, err := cli.HashKV(ctx, "https://"+c.stores[0], info.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if hk.Hash != info.Hash {
		t.Fatalf("snapshot hash %d, live HashKV %d", info.Hash, hk.Hash)
	}

	t.Run("CorruptedFileRefused", func(t *testing.T) {
		b, _ := os.ReadFile(file)
		bad := filepath.Join(t.TempDir(), "bad.snap")
		flipped := bytes.Clone(b)
		flipped[len(flipped)/2] ^= 0xff
		os.WriteFile(bad, flipped, 0o600)
		if _, err := ReadSnapshotInfo(bad); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("corrupted: %v", err)
		}
		os.WriteFile(bad, b[:len(b)-100], 0o600)
		if _, err := ReadSnapshotInfo(bad); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated: %v", err)
		}
		dir := filepath.Join(t.TempDir(), "d")
		err := RestoreSnapshot(RestoreConfig{SnapshotPath: bad, DataDir: dir, Name: "r1", InitialCluster: []Peer{{Name: "r1", Address: "127.0.0.1:1"}}})
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("restore of a truncated file: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatal("failed restore left a data dir behind")
		}
	})

	// Restore into a brand new 3-member cluster.
	r := &testCluster{t: t, dir: t.TempDir(), ca: c.ca, pkiDir: c.pkiDir}
	for i := 0; i < 3; i++ {
		r.peers = append(r.peers, Peer{Name: fmt.Sprintf("r%d", i+1), Address: freeAddr(t)})
		r.stores = append(r.stores, freeAddr(t))
	}
	for i := 0; i < 3; i++ {
		cfg := r.memberConfig(r.peers[i].Name, r.peers[i].Address, r.stores[i])
		cfg.InitialCluster = r.peers
		cfg.InitialClusterToken = "restored"
		if err := RestoreSnapshot(RestoreConfig{SnapshotPath: file, DataDir: cfg.DataDir, Name: cfg.Name,
			InitialCluster: r.peers, InitialClusterToken: "restored", CAFingerprint: c.ca.Fingerprint()}); err != nil {
			t.Fatal(err)
		}
		r.cfgs = append(r.cfgs, cfg)
	}
	r.servers = make([]*Server, 3)
	for i := range r.cfgs {
		s, err := New(r.cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		r.servers[i] = s
	}
	t.Cleanup(r.close)
	r.waitLeader()
	rcli := r.client()
	for i := range r.servers {
		r.client(i).Get(ctx, "snap/last")
		h, err := rcli.HashKV(ctx, "https://"+r.stores[i], info.Revision)
		if err != nil {
			t.Fatal(err)
		}
		if h.Hash != info.Hash {
			t.Fatalf("restored member r%d HashKV %d, snapshot %d", i+1, h.Hash, info.Hash)
		}
	}
	put, err := rcli.Put(ctx, "snap/after", "y")
	if err != nil {
		t.Fatal(err)
	}
	if put.Header.Revision <= info.Revision {
		t.Fatalf("revision after restore %d, want above snapshot revision %d", put.Header.Revision, info.Revision)
	}
}

func TestQuotaRaisesNoSpaceAlarm(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.QuotaBytes = 64 * 1024 })
	ctx := ctxT(t)
	cli := c.client()
	val := strings.Repeat("x", 8*1024)
	var err error
	for i := 0; i < 200 && err == nil; i++ {
		_, err = cli.Put(ctx, fmt.Sprintf("quota/%d", i), val)
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("writes past the quota: %v, want ErrNoSpace", err)
	}
	if _, err := cli.Get(ctx, "quota/0"); err != nil {
		t.Fatalf("reads must work under NOSPACE: %v", err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 1 {
		t.Fatalf("alarm list: %v %v", alarms, err)
	}
}

func TestClosedReplicaIsNoLongerLeader(t *testing.T) {
	c := newTestCluster(t, 1)
	s := c.servers[c.waitLeader()]
	s.Close()
	if s.IsLeader() {
		t.Fatal("a closed replica still reports itself leader")
	}
}

func TestMoveLeader(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	// etcdctl's status table divides by the database size: even an empty
	// store must report one.
	if st, err := c.client(0).Status(ctx, "https://"+c.stores[0]); err != nil || st.DbSize <= 0 {
		t.Fatalf("status of an empty store: %+v %v", st, err)
	}
	leader := c.waitLeader()
	target := (leader + 1) % 3
	if _, err := c.client(target).MoveLeader(ctx, c.servers[target].MemberID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.servers[target].IsLeader() })
}

func TestRequireLeaderWatchEndsWhenQuorumIsLost(t *testing.T) {
	c := newTestCluster(t, 3)
	cli := c.client(0)
	ctx := clientv3.WithRequireLeader(ctxT(t))
	w := cli.Watch(ctx, "rl/", clientv3.WithPrefix())
	if _, err := cli.Put(ctxT(t), "rl/a", "1"); err != nil {
		t.Fatal(err)
	}
	if wr := <-w; len(wr.Events) != 1 {
		t.Fatalf("first event: %+v", wr)
	}
	c.stop(1)
	c.stop(2)
	select {
	case wr := <-w:
		if !errors.Is(wr.Err(), rpctypes.ErrNoLeader) {
			t.Fatalf("watch ended with %v, want ErrNoLeader", wr.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a require-leader watch on a replica without quorum stayed open")
	}
}

func TestLaggingFollowerCatchesUpFromRaftSnapshot(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.TrailingLogs = 10 })
	ctx := ctxT(t)
	leader := c.waitLeader()
	lagger := (leader + 1) % 3
	// A watch on the lagging follower must survive the snapshot install.
	start, _ := c.client().Put(ctx, "lag/start", "x")
	w := c.client(lagger).Watch(ctx, "lag/", clientv3.WithPrefix(), clientv3.WithRev(start.Header.Revision+1))
	c.stop(lagger)
	rest := []int{leader, (leader + 2) % 3}
	cli := c.client(rest...)
	for i := 0; i < 300; i++ {
		putRetrying(t, cli, fmt.Sprintf("lag/%03d", i), "v")
	}
	// Compact the leader's log so the follower cannot catch up from it.
	if err := c.servers[leader].raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c.restart(lagger)
	last, _ := cli.Put(ctx, "lag/last", "x")
	waitFor(t, func() bool { return c.servers[lagger].fsm.store.Rev() >= last.Header.Revision })
	h1, _, _, _ := c.servers[lagger].fsm.store.HashKV(last.Header.Revision)
	h2, _, _, _ := c.servers[leader].fsm.store.HashKV(last.Header.Revision)
	if h1 != h2 {
		t.Fatal("follower restored from a Raft snapshot holds different state")
	}
	g, err := c.client(lagger).Get(ctx, "lag/", clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithCountOnly())
	if err != nil || g.Count != 302 {
		t.Fatalf("lagging follower has %d keys (%v), want 302", g.Count, err)
	}
	_ = w // the stream broke with the restart; a new watch from the old revision replays everything
	w2 := c.client(lagger).Watch(ctx, "lag/", clientv3.WithPrefix(), clientv3.WithRev(start.Header.Revision+1))
	seen := 0
	for seen < 301 {
		wr := <-w2
		if wr.Err() != nil {
			t.Fatal(wr.Err())
		}
		seen += len(wr.Events)
	}
}

func TestMemberUpdateMovesAPeer(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	leader := c.waitLeader()
	moved := (leader + 1) % 3
	newPeer := freeAddr(t)
	cli := c.client(leader)
	// A member's name appears in the list once it has published it, just
	// after the cluster starts: find the member before stopping it.
	var id uint64
	waitFor(t, func() bool {
		list, err := cli.MemberList(ctx)
		if err != nil {
			return false
		}
		for _, m := range list.Members {
			if m.Name == c.cfgs[moved].Name {
				id = m.ID
			}
		}
		return id != 0
	})
	c.stop(moved)
	// Writes first, so that the leader's replication pipeline to the
	// stopped member has failed and ended before the update: in
	// hashicorp/raft a pipeline failing at the moment the peer's address
	// changes logs the peer without its lock, which the race detector
	// reports (a read for a log line, harmless, and not ours to fix).
	for i := range 5 {
		if _, err := cli.Put(ctx, fmt.Sprintf("before-move/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cli.MemberUpdate(ctx, id, []string{"https://" + newPeer}); err != nil {
		t.Fatal(err)
	}
	cfg := c.cfgs[moved]
	cfg.PeerListen, cfg.AdvertisePeer = newPeer, ""
	cfg.InitialCluster = nil // only a bootstrap needs it
	c.cfgs[moved] = cfg
	c.restart(moved)
	put, err := cli.Put(ctx, "moved", "x")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.servers[moved].fsm.store.Rev() >= put.Header.Revision })
	list, _ := cli.MemberList(ctx)
	for _, m := range list.Members {
		if m.Name == cfg.Name && m.PeerURLs[0] != "https://"+newPeer {
			t.Fatalf("member list shows %s at %v", m.Name, m.PeerURLs)
		}
	}
}

// putRetrying writes key, retrying while the two remaining members elect
// a leader: on a loaded machine one may miss heartbeats. The put is
// idempotent, so a retry after an unknown outcome is harmless.
func putRetrying(t *testing.T, cli *clientv3.Client, key, value string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := cli.Put(ctxT(t), key, value)
		if err == nil {
			return
		}
		transient := errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) ||
			errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) || errors.Is(err, rpctypes.ErrTimeout)
		if !transient || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Raft never answers an entry still queued for its leader loop when it
// shuts down; Close and every writer must return all the same.
func TestCloseReturnsWhileWritesAreQueued(t *testing.T) {
	c := newTestCluster(t, 1)
	s := c.servers[c.waitLeader()]
	data, err := encodeCommand(cmdPut, &pb.PutRequest{Key: []byte("q"), Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	var writers sync.WaitGroup
	var applied atomic.Int64
	for range 128 {
		writers.Go(func() {
			for {
				if _, err, _ := s.applyLocal(context.Background(), data); err != nil {
					return
				}
				applied.Add(1)
			}
		})
	}
	waitFor(t, func() bool { return applied.Load() > 500 })
	closed := make(chan struct{})
	go func() {
		s.Close()
		writers.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close or a writer hung on an entry Raft never answered")
	}
}

// A leader that stops gracefully hands leadership to a follower first, so
// the cluster has a leader again long before the followers would have
// noticed the silence (or the refused port).
func TestStoppingLeaderHandsLeadershipOver(t *testing.T) {
	const timeout = 4 * time.Second
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.HeartbeatTimeout, cfg.ElectionTimeout = timeout, timeout })
	old := c.waitLeader()
	s := c.servers[old]
	start := time.Now()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	for {
		for i, r := range c.servers {
			if i != old && r.IsLeader() {
				took := time.Since(start)
				t.Logf("replica %d leads %v after the leader began to stop", i, took.Round(time.Millisecond))
				if took > timeout/8 {
					t.Fatalf("a new leader took %v; the leader did not hand over", took)
				}
				<-closed
				c.servers[old] = nil
				return
			}
		}
		if time.Since(start) > timeout/4 {
			t.Fatalf("no new leader %v after the leader began to stop", time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
