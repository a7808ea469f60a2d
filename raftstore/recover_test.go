package raftstore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/pki"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestForceNewClusterKeepsSurvivorData loses two of three members for
// good and restarts the survivor alone with ForceNewCluster: it must serve
// every acknowledged write, accept new ones, stay a one-member cluster on
// a plain restart, and let a new member join.
func TestForceNewClusterKeepsSurvivorData(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cli := c.client()
	var rev int64
	for i := 0; i < 20; i++ {
		resp, err := cli.Put(ctx, fmt.Sprintf("fnc/%02d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	cli.Close()
	// The survivor keeps what it holds: wait until it holds every write,
	// as an operator picks the member with the most recent data (a write
	// is acknowledged once two of three have it, maybe not this one).
	waitFor(t, func() bool { return c.servers[0].fsm.store.Rev() >= rev })
	for i := range c.servers {
		c.stop(i)
	}

	c.cfgs[0].ForceNewCluster = true
	c.restart(0)
	c.waitLeader()
	get := func(want int64) {
		t.Helper()
		resp, err := c.client(0).Get(ctx, "fnc/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != want {
			t.Fatalf("the survivor holds %d keys, want %d", resp.Count, want)
		}
	}
	get(20)
	if _, err := c.client(0).Put(ctx, "fnc/after", "v"); err != nil {
		t.Fatalf("the survivor refused a write after --force-new-cluster: %v", err)
	}
	members, err := c.servers[0].Members()
	if err != nil || len(members) != 1 || members[0].ID != c.servers[0].MemberID() {
		t.Fatalf("members after --force-new-cluster: %v %v, want only the survivor", members, err)
	}
	meta, _, err := readMeta(c.cfgs[0].DataDir)
	if err != nil || meta.ForcedNewCluster == nil || len(meta.ForcedNewCluster.Dropped) != 2 {
		t.Fatalf("member.json does not record the forced new cluster: %+v %v", meta.ForcedNewCluster, err)
	}

	// A plain restart keeps the one-member cluster and its data.
	c.stop(0)
	c.cfgs[0].ForceNewCluster = false
	c.restart(0)
	c.waitLeader()
	get(21)

	// A new member joins the recovered cluster.
	joiner := c.memberConfig("s4", freeAddr(t), freeAddr(t))
	joiner.Join = "https://" + c.stores[0]
	s4, err := New(joiner)
	if err != nil {
		t.Fatalf("joining the recovered cluster: %v", err)
	}
	t.Cleanup(func() { s4.Close() })
	waitFor(t, func() bool { m, err := c.servers[0].Members(); return err == nil && len(m) == 2 })
}

func TestForceNewClusterRefusesAnEmptyDataDir(t *testing.T) {
	c := &testCluster{t: t, dir: t.TempDir()}
	if err := pki.Init(filepath.Join(c.dir, "pki")); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(filepath.Join(c.dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	c.ca = ca
	cfg := c.memberConfig("s1", freeAddr(t), freeAddr(t))
	cfg.ForceNewCluster = true
	_, err = New(cfg)
	if err == nil || !strings.Contains(err.Error(), "holds no member") {
		t.Fatalf("New with --force-new-cluster on an empty data dir: %v, want a refusal", err)
	}
}
