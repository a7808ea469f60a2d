package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestCompactorsKeepOneIntervalOfHistory(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 1)
	kv := c.local(0).KV
	ctx := ctxT(t)
	first, err := kv.Put(ctx, "k", "1")
	if err != nil {
		t.Fatal(err)
	}
	// Two API servers' compactors.
	var a, b compactor
	steps := []struct {
		who  *compactor
		want int64 // revision compacted, 0 for none
	}{
		{&a, 0},                         // first round: nothing known yet
		{&b, 0},                         // b loses the round, learns the count
		{&a, first.Header.Revision + 1}, // a compacts to what it saw a round ago
	}
	for i, st := range steps {
		if err := st.who.round(ctx, kv); err != nil {
			t.Fatal(err)
		}
		if st.who.compacted != st.want {
			t.Fatalf("step %d compacted %d, want %d", i, st.who.compacted, st.want)
		}
	}
	if _, err := kv.Get(ctx, "k", clientv3.WithRev(first.Header.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read below the compaction: %v", err)
	}

	run, cancel := context.WithCancel(ctx)
	defer cancel()
	go RunCompactor(run, kv, 20*time.Millisecond, testLogger())
	go RunCompactor(run, kv, 20*time.Millisecond, testLogger())
	put, _ := kv.Put(ctx, "k", "2")
	waitFor(t, func() bool {
		_, err := kv.Get(ctx, "k", clientv3.WithRev(put.Header.Revision-1))
		return errors.Is(err, rpctypes.ErrCompacted)
	})
}
