package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// bindWatch records when a watch first shows each pod bound.
type bindWatch struct {
	want  int
	mu    sync.Mutex
	bound map[int]time.Time
	done  chan struct{}
	err   error
}

// watchBindings watches the benchmark's pods from now on.
func watchBindings(ctx context.Context, cs kubernetes.Interface, want int) (*bindWatch, error) {
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("schedbench: list pods: %w", err)
	}
	w := &bindWatch{want: want, bound: make(map[int]time.Time, want), done: make(chan struct{})}
	go w.loop(ctx, cs, list.ResourceVersion)
	return w, nil
}

func (w *bindWatch) loop(ctx context.Context, cs kubernetes.Interface, rv string) {
	defer close(w.done)
	for ctx.Err() == nil {
		wi, err := cs.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			w.err = fmt.Errorf("schedbench: watch pods: %w", err)
			return
		}
		for ev := range wi.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				w.err = fmt.Errorf("schedbench: watch error: %v", ev.Object)
				wi.Stop()
				return
			}
			pod, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			rv = pod.ResourceVersion
			if pod.Spec.NodeName == "" || ev.Type == watch.Deleted {
				continue
			}
			i, err := strconv.Atoi(strings.TrimPrefix(pod.Name, "pod-"))
			if err != nil {
				continue
			}
			w.mu.Lock()
			if _, seen := w.bound[i]; !seen {
				w.bound[i] = now
			}
			n := len(w.bound)
			w.mu.Unlock()
			if n >= w.want {
				wi.Stop()
				return
			}
		}
	}
}

// wait returns the bind times once every pod is bound.
func (w *bindWatch) wait(ctx context.Context) (map[int]time.Time, error) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			if w.err != nil {
				return nil, w.err
			}
			if len(w.bound) < w.want {
				return nil, fmt.Errorf("schedbench: %d of %d pods bound: %w", len(w.bound), w.want, ctx.Err())
			}
			return w.bound, nil
		case <-tick.C:
			w.mu.Lock()
			n := len(w.bound)
			w.mu.Unlock()
			fmt.Printf("  %d/%d pods bound\n", n, w.want)
		}
	}
}

type result struct {
	pods       int
	elapsed    time.Duration
	throughput float64
	// steady is the rate from the first bind to the last, leaving out
	// the scheduler's start (informer lists) with -preload.
	steady         float64
	p50, p99, pmax time.Duration
	schedOnly      bool
}

// summarize turns send and bind times into throughput (from the first
// create, or from the scheduler's start with -preload, to the last bind)
// and creation-to-bind latencies.
func summarize(c *creation, bound map[int]time.Time, schedStart time.Time) result {
	r := result{pods: len(bound)}
	lat := make([]time.Duration, 0, len(bound))
	var first, last time.Time
	for i, t := range bound {
		lat = append(lat, t.Sub(c.sent[i]))
		if t.After(last) {
			last = t
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	r.steady = float64(r.pods-1) / last.Sub(first).Seconds()
	slices.Sort(lat)
	from := c.first
	if !schedStart.IsZero() {
		from, r.schedOnly = schedStart, true
	}
	r.elapsed = last.Sub(from)
	r.throughput = float64(r.pods) / r.elapsed.Seconds()
	r.p50 = lat[len(lat)/2]
	r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	r.pmax = lat[len(lat)-1]
	return r
}

func (r result) print(out io.Writer, o options, cpu time.Duration) {
	what := "create+schedule+bind, scheduler running throughout"
	if r.schedOnly {
		what = "scheduler started after every pod was created"
	}
	fmt.Fprintf(out, "\nworkload %s: %d nodes, %d pods (%s)\n", o.workload, o.nodes, r.pods, what)
	fmt.Fprintf(out, "  throughput     %.0f pods/s (%d pods in %s); %.0f pods/s from the first bind to the last\n",
		r.throughput, r.pods, r.elapsed.Round(time.Millisecond), r.steady)
	fmt.Fprintf(out, "  create->bound  p50 %s  p99 %s  max %s\n", r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.pmax.Round(time.Millisecond))
	fmt.Fprintf(out, "  process CPU    %s (cluster, clients and scheduler together)\n", cpu.Round(time.Millisecond))
}
