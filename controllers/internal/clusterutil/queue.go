// Package clusterutil holds what the cluster controllers (jobs, cron
// jobs, endpoints, nodes, namespaces, garbage collection) share: a keyed
// workqueue with its worker loop, event handlers that feed it, creation
// expectations, and small pod and node predicates.
package clusterutil

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Queue is a rate-limited workqueue of object keys ("namespace/name", or
// "name" for cluster-scoped objects).
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a queue whose delayed adds follow clk, so that tests
// with a fake clock decide when a requeue fires. Failed keys are retried
// with Kubernetes' default controller backoff.
func NewQueue(name string, clk clock.WithTicker) Queue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk})
}

// SyncFunc converges the object named by key; an error retries the key
// with backoff.
type SyncFunc func(ctx context.Context, key string) error

// RunWorkers takes keys from q and syncs them with workers goroutines
// (calling fn) until ctx ends, then shuts q down and waits for the workers. A key is
// never synced by two workers at once.
func RunWorkers(ctx context.Context, log *slog.Logger, q Queue, workers int, fn SyncFunc) {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, log, q, fn) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, log *slog.Logger, q Queue, fn SyncFunc) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := fn(ctx, key); err != nil {
		if ctx.Err() != nil {
			return true
		}
		log.Debug("sync failed, retrying", "key", key, "retries", q.NumRequeues(key), "err", err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// KeyOf returns the queue key of obj, which may be a deletion tombstone.
func KeyOf(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key, err == nil
}

// Enqueue returns event handlers that add the key of every added,
// updated or deleted object to q.
func Enqueue(q Queue) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if key, ok := KeyOf(obj); ok {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// Untombstone returns the object a delete event carries, unwrapping the
// tombstone a relisting informer hands over when it missed the delete.
func Untombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
