package apibench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// maxErrors stops a phase early: a server that fails this many requests is
// broken, and going on would only turn a quick failure into a long one.
const maxErrors = 100

// progressEvery is how often a long phase logs how far it got.
const progressEvery = 5 * time.Second

// Result is one measured phase: a closed-loop run of one kind of request.
type Result struct {
	// Name says what was measured, e.g. "create" or "list".
	Name string `json:"name"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Requests counts the successful requests.
	Requests int `json:"requests"`
	// Errors counts the failed requests; FirstError is the first of them.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Elapsed is the wall time of the phase.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Throughput is successful requests per second.
	Throughput float64 `json:"per_second"`
	// Latency summarizes the successful requests; a paginated list counts
	// as one request that ends with its last page.
	Latency Latency `json:"latency"`
	// Items is the number of pods the last list returned; zero for other
	// requests.
	Items int `json:"items,omitempty"`
}

// op sends request i as client w.
type op func(ctx context.Context, w, i int) error

// loop is a closed-loop phase: clients each send one request at a time
// until total requests were sent.
type loop struct {
	name    string
	clients int
	total   int
	timeout time.Duration
	log     *slog.Logger
	op      op
}

// clientStats is what one client saw; clients never share it, so the hot
// loop takes no lock.
type clientStats struct {
	lat      []time.Duration
	errors   int
	firstErr error
}

func (l loop) run(parent context.Context) Result {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		next   atomic.Int64
		done   atomic.Int64
		failed atomic.Int64
		stats  = make([]clientStats, l.clients)
		wg     sync.WaitGroup
		start  = time.Now()
	)
	stopProgress := l.progress(ctx, &done, start)
	for w := range l.clients {
		wg.Go(func() {
			st := &stats[w]
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= l.total {
					return
				}
				rctx, rcancel := context.WithTimeout(ctx, l.timeout)
				t0 := time.Now()
				err := l.op(rctx, w, i)
				d := time.Since(t0)
				rcancel()
				done.Add(1)
				if err != nil {
					st.errors++
					if st.firstErr == nil {
						st.firstErr = err
					}
					if failed.Add(1) >= maxErrors {
						cancel()
					}
					continue
				}
				st.lat = append(st.lat, d)
			}
		})
	}
	wg.Wait()
	stopProgress()
	return l.result(stats, time.Since(start), failed.Load() >= maxErrors)
}

// progress logs how many requests are done every progressEvery until the
// returned function is called.
func (l loop) progress(ctx context.Context, done *atomic.Int64, start time.Time) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				l.log.Info("progress", "phase", l.name, "done", done.Load(), "of", l.total,
					"elapsed", time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// result merges the clients' stats.
func (l loop) result(stats []clientStats, elapsed time.Duration, aborted bool) Result {
	res := Result{Name: l.name, Clients: l.clients, Elapsed: elapsed}
	var all []time.Duration
	for _, st := range stats {
		all = append(all, st.lat...)
		res.Errors += st.errors
		if res.FirstError == "" && st.firstErr != nil {
			res.FirstError = st.firstErr.Error()
		}
	}
	if aborted {
		res.FirstError = fmt.Sprintf("stopped after %d errors; first: %s", maxErrors, res.FirstError)
	}
	res.Requests = len(all)
	if elapsed > 0 {
		res.Throughput = float64(res.Requests) / elapsed.Seconds()
	}
	res.Latency = summarize(all)
	return res
}
