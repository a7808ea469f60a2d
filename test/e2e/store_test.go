package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestThreeReplicaTLSCluster bootstraps one 3-replica TLS cluster with
// `cairn server` and runs, in order, what an operator does with it: the
// subtests share the cluster to keep the suite fast, and the last ones
// change its membership.
func TestThreeReplicaTLSCluster(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pkiInit(t), "e2e", "s1", "s2", "s3")
	c.bootstrap(t)

	t.Run("EtcdctlWritesReadsAndSeesThreeAgreeingMembers", func(t *testing.T) { testEtcdctlBasics(t, c) })
	t.Run("MetricsAndHealthEndpointsAnswer", func(t *testing.T) { testMetricsAndHealth(t, c) })
	t.Run("ClientWithAnotherCAIsRefusedAndLogged", func(t *testing.T) { testForeignClientRefused(t, c) })
	t.Run("SnapshotSaveStatusRestoreKeepsEveryKey", func(t *testing.T) { testSnapshotRestore(t, c) })
	t.Run("RestartedMemberRejoinsAndWrongIdentityIsRefused", func(t *testing.T) { testRestart(t, c) })
	t.Run("JoinAddsVoterAndLearnerCanBePromoted", func(t *testing.T) { testJoin(t, c) })
}

func testEtcdctlBasics(t *testing.T, c *cluster) {
	if out := c.etcdctl(t, "put", "greeting", "hello"); strings.TrimSpace(out) != "OK" {
		t.Errorf("put printed %q, want OK", out)
	}
	// Each member answers the read alone, so a replica that missed the
	// write shows up.
	for _, m := range c.members {
		out := mustRun(t, c.etcdctlArgs(m.storeURL(), "get", "greeting")...).stdout
		if out != "greeting\nhello\n" {
			t.Errorf("get greeting from %s printed %q, want the key and hello", m.name, out)
		}
	}

	var list ctlMemberList
	c.etcdctlJSON(t, &list, c.endpoints(), "member", "list")
	ids := map[uint64]string{}
	for _, want := range c.members {
		got, ok := list.byName(want.name)
		switch {
		case !ok:
			t.Errorf("member list has no %s: %+v", want.name, list.Members)
			continue
		case !slices.Equal(got.PeerURLs, []string{"https://" + want.peer}):
			t.Errorf("member %s peer URLs %v, want https://%s", want.name, got.PeerURLs, want.peer)
		case !slices.Equal(got.ClientURLs, []string{want.storeURL()}):
			t.Errorf("member %s client URLs %v, want %s", want.name, got.ClientURLs, want.storeURL())
		case got.IsLearner:
			t.Errorf("member %s is listed as a learner", want.name)
		}
		ids[got.ID] = want.name
	}
	if len(list.Members) != 3 || len(ids) != 3 {
		t.Errorf("member list shows %d members with %d distinct IDs, want 3: %+v", len(list.Members), len(ids), list.Members)
	}
	if table := c.etcdctl(t, "member", "list"); strings.Count(table, "started") != 3 {
		t.Errorf("member list does not show 3 started members:\n%s", table)
	}

	var status []ctlEndpointStatus
	c.etcdctlJSON(t, &status, c.endpoints(), "endpoint", "status")
	if len(status) != 3 {
		t.Fatalf("endpoint status answered for %d endpoints, want 3: %+v", len(status), status)
	}
	leader := status[0].Status.Leader
	if _, ok := ids[leader]; !ok {
		t.Errorf("endpoint status names leader %x, not a listed member", leader)
	}
	for _, s := range status {
		if s.Status.Leader != leader || s.Status.Header.ClusterID != list.Header.ClusterID {
			t.Errorf("%s reports leader %x in cluster %x; %s reports leader %x in cluster %x",
				s.Endpoint, s.Status.Leader, s.Status.Header.ClusterID, status[0].Endpoint, leader, list.Header.ClusterID)
		}
		if ids[s.Status.Header.MemberID] == "" {
			t.Errorf("%s answers as member %x, which member list does not show", s.Endpoint, s.Status.Header.MemberID)
		}
	}

	hashes := hashKV(t, c, c.endpoints(), 0)
	if len(hashes) != 3 {
		t.Fatalf("endpoint hashkv answered for %d endpoints, want 3: %+v", len(hashes), hashes)
	}
	if _, ok := agreedHash(hashes); !ok {
		t.Errorf("endpoint hashkv differs between replicas: %s", describeHashes(hashes))
	}
}

// hashKV runs `etcdctl endpoint hashkv` on endpoints at rev (0: latest).
func hashKV(t *testing.T, c *cluster, endpoints string, rev int64) []ctlEndpointHash {
	t.Helper()
	var out []ctlEndpointHash
	c.etcdctlJSON(t, &out, endpoints, "endpoint", "hashkv", "--rev", fmt.Sprint(rev))
	return out
}

// agreedHash returns the hash every endpoint reported for one revision,
// and false when they differ.
func agreedHash(hs []ctlEndpointHash) (uint32, bool) {
	if len(hs) == 0 {
		return 0, false
	}
	for _, h := range hs[1:] {
		if h.HashKV.Hash != hs[0].HashKV.Hash || h.HashKV.HashRevision != hs[0].HashKV.HashRevision {
			return 0, false
		}
	}
	return hs[0].HashKV.Hash, true
}

func describeHashes(hs []ctlEndpointHash) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s: hash %d at revision %d", h.Endpoint, h.HashKV.Hash, h.HashKV.HashRevision))
	}
	return strings.Join(parts, "; ")
}
