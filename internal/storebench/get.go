package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// measureGet fills the keyspace, then measures gets of random keys with every
// client, first linearizable (the etcd default, a quorum round per read or
// batch of reads) and then serializable (served from the local member).
func (r *runner) measureGet(ctx context.Context) ([]Result, error) {
	if err := r.fill(ctx); err != nil {
		return nil, err
	}
	kinds := []struct {
		name string
		opts []clientv3.OpOption
	}{
		{"get-linearizable", nil},
		{"get-serializable", []clientv3.OpOption{clientv3.WithSerializable()}},
	}
	var results []Result
	for _, k := range kinds {
		res, err := r.measure(ctx, k.name, r.cfg.Clients, func(ctx context.Context, p pool, w int, rnd *rand.Rand) error {
			resp, err := p.get(w).Get(ctx, keyOf(rnd.IntN(r.cfg.Keyspace), r.cfg.KeySize), k.opts...)
			if err == nil && len(resp.Kvs) != 1 {
				return fmt.Errorf("storebench: get returned %d keys, want 1: the keyspace was filled before the run", len(resp.Kvs))
			}
			return err
		})
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// fill writes every key of the keyspace once so that every get finds a value
// of the configured size.
func (r *runner) fill(ctx context.Context) error {
	r.log.Info("get: filling keyspace", "keys", r.cfg.Keyspace)
	p, err := newPool(r.cfg, r.endpoints, min(r.cfg.Conns, r.cfg.Clients))
	if err != nil {
		return err
	}
	defer p.close()
	value := string(randomValue(r.cfg.ValueSize))
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		mu       sync.Mutex
	)
	for w := range r.cfg.Clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= r.cfg.Keyspace {
					return
				}
				opCtx, cancel := context.WithTimeout(ctx, opTimeout)
				_, err := p.get(w).Put(opCtx, keyOf(i, r.cfg.KeySize), value)
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("storebench: filling the keyspace: %w", err)
					}
					mu.Unlock()
					next.Store(int64(r.cfg.Keyspace))
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
