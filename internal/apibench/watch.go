package apibench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchResult is the watch fan-out measurement: how long one change takes
// to reach every one of many watches.
type WatchResult struct {
	// Watchers is the number of watches asked for; Opened of them were
	// established, over Servers servers, in OpenTime.
	Watchers int           `json:"watchers"`
	Opened   int           `json:"opened"`
	Servers  int           `json:"servers"`
	OpenTime time.Duration `json:"open_ns"`
	// WriteLatency is how long the change itself (a pod create) took.
	WriteLatency time.Duration `json:"write_ns"`
	// Seen counts the watches that delivered the change within Timeout.
	Seen    int           `json:"seen"`
	Timeout time.Duration `json:"timeout_ns"`
	// Delay summarizes, over the watches that saw it, the time from sending
	// the change to that watch delivering it.
	Delay Latency `json:"delay"`
	// AllSeen is the time from sending the change until the last watch
	// delivered it; zero unless every watch did.
	AllSeen time.Duration `json:"all_seen_ns"`
	// Errors counts watches that failed to open or ended early.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// watcher is one open watch and when it delivered the change.
type watcher struct {
	w    watch.Interface
	seen time.Time
	err  error
}

// watchFanOut opens cfg.Watchers watches on the namespace, spread over the
// servers and all starting at the current revision, creates one pod, and
// times its arrival at each.
func (r *runner) watchFanOut(ctx context.Context) (*WatchResult, error) {
	res := &WatchResult{Watchers: r.cfg.Watchers, Servers: len(r.c.servers), Timeout: r.cfg.WatchTimeout}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	// A list of one item returns the namespace's current revision; watches
	// from there see only what happens next, not 10,000 pods replayed.
	l, err := r.c.server(0).CoreV1().Pods(r.cfg.Namespace).List(rctx, metav1.ListOptions{Limit: 1})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("apibench: revision before the watches: %w", err)
	}
	wctx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	start := time.Now()
	ws := r.openWatches(wctx, l.ResourceVersion, res)
	res.OpenTime = time.Since(start)
	if res.Opened == 0 {
		return res, nil
	}
	probe := podName(r.runID, r.cfg.Pods) + "-watch"
	var wg sync.WaitGroup
	for _, w := range ws {
		if w != nil {
			wg.Go(func() { w.await(probe) })
		}
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	r.log.Info("watches open; making the change", "watches", res.Opened, "open", res.OpenTime.Round(time.Millisecond))
	sent := time.Now()
	rctx, cancel = context.WithTimeout(ctx, r.cfg.RequestTimeout)
	_, err = r.c.server(0).CoreV1().Pods(r.cfg.Namespace).Create(rctx, newPod(r.runID, probe), metav1.CreateOptions{})
	cancel()
	res.WriteLatency = time.Since(sent)
	if err != nil {
		return res, fmt.Errorf("apibench: the change the watches wait for: %w", err)
	}
	select {
	case <-all:
	case <-time.After(r.cfg.WatchTimeout):
	}
	stopWatches()
	<-all
	res.summarize(ws, sent)
	return res, nil
}

// openWatches opens the watches with as many concurrent requests as there
// are clients; a nil entry is a watch that failed to open.
func (r *runner) openWatches(ctx context.Context, rv string, res *WatchResult) []*watcher {
	ws := make([]*watcher, r.cfg.Watchers)
	errs := make([]error, r.cfg.Watchers)
	sem := make(chan struct{}, r.cfg.Clients)
	var wg sync.WaitGroup
	for i := range ws {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// The server ends a watch after TimeoutSeconds, so none outlives
			// a run that dies without stopping it.
			timeout := int64((r.cfg.RequestTimeout + r.cfg.WatchTimeout).Seconds())
			w, err := r.c.server(i).CoreV1().Pods(r.cfg.Namespace).Watch(ctx, metav1.ListOptions{
				ResourceVersion: rv, TimeoutSeconds: &timeout,
			})
			if err != nil {
				errs[i] = err
				return
			}
			ws[i] = &watcher{w: w}
		})
	}
	wg.Wait()
	for i, w := range ws {
		if w != nil {
			res.Opened++
		} else {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = "open: " + errs[i].Error()
			}
		}
	}
	return ws
}

// await reads events until the probe pod arrives, the watch ends or fails.
func (w *watcher) await(probe string) {
	defer w.w.Stop()
	for ev := range w.w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			w.err = fmt.Errorf("watch error event: %v", ev.Object)
			return
		case watch.Added:
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == probe {
				w.seen = time.Now()
				return
			}
		}
	}
}

// summarize turns the watchers' arrival times into the result.
func (res *WatchResult) summarize(ws []*watcher, sent time.Time) {
	var delays []time.Duration
	for _, w := range ws {
		switch {
		case w == nil:
		case !w.seen.IsZero():
			delays = append(delays, w.seen.Sub(sent))
		case w.err != nil:
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = w.err.Error()
			}
		}
	}
	res.Seen = len(delays)
	res.Delay = summarize(delays)
	if res.Seen == res.Watchers {
		res.AllSeen = res.Delay.Max
	}
}
