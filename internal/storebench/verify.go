package storebench

import (
	"bytes"
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxLostKeys caps how many lost keys a report lists; the count is exact.
const maxLostKeys = 10

// verify reads every failover writer's keys back from the survivors and
// checks that each acknowledged write is there with the value it was written
// with. The reads are linearizable ranges, paginated, which checks the same
// thing as one linearizable get per key at a fraction of the requests.
func (r *runner) verify(ctx context.Context, logs []writerLog, res *FailoverResult) error {
	c, err := newClient(r.cfg, r.endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	for w, l := range logs {
		found, err := r.readWriter(ctx, c, w)
		if err != nil {
			return err
		}
		for _, seq := range l.acked {
			if found[seq] {
				res.Verified++
				continue
			}
			res.Lost++
			if len(res.LostKeys) < maxLostKeys {
				res.LostKeys = append(res.LostKeys, failoverKey(w, seq))
			}
		}
	}
	return nil
}

// readWriter returns the sequence numbers of writer w's keys that hold the
// value they were written with.
func (r *runner) readWriter(ctx context.Context, c *clientv3.Client, w int) (map[int64]bool, error) {
	const page = 1000
	prefix := failoverPrefix(w)
	end := clientv3.GetPrefixRangeEnd(prefix)
	found := make(map[int64]bool)
	for from := prefix; ; {
		resp, err := getWithRetry(ctx, c, from, clientv3.WithRange(end), clientv3.WithLimit(page))
		if err != nil {
			return nil, fmt.Errorf("storebench: reading back the writes of failover writer %d: %w", w, err)
		}
		for _, kv := range resp.Kvs {
			seq, err := failoverSeq(string(kv.Key), w)
			if err != nil {
				return nil, err
			}
			found[seq] = bytes.Equal(kv.Value, valueFor(string(kv.Key), r.cfg.ValueSize))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return found, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// getWithRetry retries a read a few times: right after a leader change the
// survivors may still be settling, and a failed read must not be mistaken
// for lost data.
func getWithRetry(ctx context.Context, c *clientv3.Client, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		opCtx, cancel := context.WithTimeout(ctx, opTimeout)
		var resp *clientv3.GetResponse
		resp, err = c.Get(opCtx, key, opts...)
		cancel()
		if err == nil {
			return resp, nil
		}
	}
	return nil, err
}
