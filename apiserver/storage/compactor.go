package storage

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactRevisionKey is the key API servers use to agree on who compacts
// the store's history each round; Kubernetes uses the same key.
const CompactRevisionKey = "compact_rev_key"

// DefaultCompactionInterval is Kubernetes' default (--etcd-compaction-interval).
const DefaultCompactionInterval = 5 * time.Minute

// RunCompactor compacts the store's history every interval until ctx
// ends, keeping at least one interval of it: each round compacts to the
// revision seen one round earlier, so watches and continue tokens younger
// than an interval stay valid. Several API servers may run it: a
// compare-and-swap on CompactRevisionKey lets one of them win each round.
func RunCompactor(ctx context.Context, kv clientv3.KV, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultCompactionInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var c compactor
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.round(ctx, kv); err != nil && ctx.Err() == nil {
			log.Warn("store compaction failed", "err", err)
		} else if err == nil && c.compacted > 0 {
			log.Debug("store compacted", "revision", c.compacted)
		}
	}
}

// compactor is one API server's view of the compaction rounds.
type compactor struct {
	version   int64 // CompactRevisionKey's version as last seen
	next      int64 // the revision to compact to when winning a round
	compacted int64 // the revision compacted in the last round, 0 if none
}

func (c *compactor) round(ctx context.Context, kv clientv3.KV) error {
	c.compacted = 0
	resp, err := kv.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(CompactRevisionKey), "=", c.version)).
		Then(clientv3.OpPut(CompactRevisionKey, "")).
		Else(clientv3.OpGet(CompactRevisionKey)).
		Commit()
	if err != nil {
		return storeError(err)
	}
	target := c.next
	c.next = resp.Header.Revision
	if !resp.Succeeded {
		// Another API server ran this round; catch up with its count.
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			c.version = kvs[0].Version
		}
		return nil
	}
	c.version++
	if target == 0 {
		return nil
	}
	if _, err := kv.Compact(ctx, target); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return storeError(err)
	}
	c.compacted = target
	return nil
}
