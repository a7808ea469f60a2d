// Package keyqueue is the loop every workload controller runs: keys
// ("namespace/name") go into a rate-limited workqueue, and workers call
// the controller's sync for each, requeueing it with backoff when sync
// fails. A key is never processed by two workers at once.
package keyqueue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue is a controller's queue of object keys.
type Queue = workqueue.TypedRateLimitingInterface[string]

// New returns a queue with the default controller rate limiter (per-key
// exponential backoff from 5 ms to 1000 s, and an overall token bucket).
func New(name string) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Key returns obj's key, understanding the tombstones informers deliver
// for deletions they missed. ok is false for objects without metadata.
func Key(obj any) (key string, ok bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k, err == nil
}

// Run runs workers workers on q until ctx ends, then shuts q down and
// waits for the syncs under way to return.
func Run(ctx context.Context, q Queue, workers int, syncFn func(ctx context.Context, key string) error, log *slog.Logger) {
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for next(ctx, q, syncFn, log) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func next(ctx context.Context, q Queue, sync func(ctx context.Context, key string) error, log *slog.Logger) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			log.Warn("sync failed; retrying", "key", key, "err", err, "retries", q.NumRequeues(key))
		}
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}
