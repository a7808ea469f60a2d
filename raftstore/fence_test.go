package raftstore

import (
	"strconv"
	"testing"
	"time"
)

// TestLeadershipEpochIsFencedInTheStore checks that each new leader
// commits a higher epoch under LeaderFenceKey, that only the established
// leader reports a Leadership, and that its context ends when it stops.
func TestLeadershipEpochIsFencedInTheStore(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	first := c.waitLeader()
	lead, ok := c.servers[first].Leadership()
	if !ok || lead.Epoch == 0 {
		t.Fatalf("leader %d reports no leadership (%v, %+v)", first, ok, lead)
	}
	for i, s := range c.servers {
		if _, ok := s.Leadership(); ok != (i == first) {
			t.Fatalf("replica %d reports leadership %v; the leader is %d", i, ok, first)
		}
	}
	readEpoch := func(members ...int) uint64 {
		t.Helper()
		resp, err := c.client(members...).Get(ctx, LeaderFenceKey)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s: %v %v", LeaderFenceKey, resp, err)
		}
		n, err := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := readEpoch(); got != lead.Epoch {
		t.Fatalf("fence key holds epoch %d, the leader committed %d", got, lead.Epoch)
	}

	c.stop(first)
	select {
	case <-lead.Context.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stopped leader's leadership context did not end")
	}
	second := c.waitLeader()
	next, ok := c.servers[second].Leadership()
	if !ok || next.Epoch <= lead.Epoch {
		t.Fatalf("new leader's epoch %d (ok %v), want above %d", next.Epoch, ok, lead.Epoch)
	}
	if got := readEpoch(second); got != next.Epoch {
		t.Fatalf("fence key holds epoch %d after failover, want %d", got, next.Epoch)
	}
}
