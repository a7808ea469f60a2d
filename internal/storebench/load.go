package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one measurement: a closed-loop run of one kind of request.
type Result struct {
	// Name says what was measured, e.g. "put" or "get-linearizable".
	Name string `json:"name"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Ops counts the successful requests.
	Ops int `json:"ops"`
	// Errors counts the failed requests; FirstError is the first of them.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Elapsed is the wall time of the run.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Throughput is successful requests per second.
	Throughput float64 `json:"ops_per_sec"`
	// Latency summarizes the successful requests.
	Latency Latency `json:"latency"`
}

// Bounds that keep a broken cluster from hanging a benchmark: no healthy
// cluster takes opTimeout to answer, or fails maxErrors requests.
const (
	opTimeout = 10 * time.Second
	maxErrors = 1000
)

// opFunc performs one request for worker w; rnd belongs to that worker.
type opFunc func(ctx context.Context, w int, rnd *rand.Rand) error

// load is a closed-loop run: workers each send one request at a time until
// total requests were sent (when total > 0) or duration has passed.
type load struct {
	name     string
	workers  int
	total    int
	duration time.Duration
	op       opFunc
}

// workerStats is what one worker saw; workers never share it, so the hot
// loop takes no lock.
type workerStats struct {
	lat      []time.Duration
	errors   int
	firstErr error
}

func (l load) run(parent context.Context) (Result, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		issued   atomic.Int64
		errCount atomic.Int64
		deadline = time.Now().Add(l.duration)
		stats    = make([]workerStats, l.workers)
		wg       sync.WaitGroup
		seed     = uint64(time.Now().UnixNano())
		start    = time.Now()
	)
	more := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if l.total > 0 {
			return issued.Add(1) <= int64(l.total)
		}
		return time.Now().Before(deadline)
	}
	for w := range l.workers {
		wg.Go(func() {
			st := &stats[w]
			rnd := rand.New(rand.NewPCG(seed, uint64(w)))
			for more() {
				opCtx, opCancel := context.WithTimeout(ctx, opTimeout)
				t0 := time.Now()
				err := l.op(opCtx, w, rnd)
				d := time.Since(t0)
				opCancel()
				if err == nil {
					st.lat = append(st.lat, d)
					continue
				}
				if ctx.Err() != nil {
					return
				}
				st.errors++
				if st.firstErr == nil {
					st.firstErr = err
				}
				if errCount.Add(1) >= maxErrors {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	res := merge(l.name, l.workers, elapsed, stats)
	if err := parent.Err(); err != nil {
		return res, err
	}
	if res.Errors >= maxErrors {
		return res, fmt.Errorf("storebench: %s: gave up after %d failed requests; the first failed with: %s", l.name, res.Errors, res.FirstError)
	}
	return res, nil
}

// merge combines the workers' stats into one Result.
func merge(name string, workers int, elapsed time.Duration, stats []workerStats) Result {
	res := Result{Name: name, Clients: workers, Elapsed: elapsed}
	var all []time.Duration
	for _, st := range stats {
		all = append(all, st.lat...)
		res.Errors += st.errors
		if res.FirstError == "" && st.firstErr != nil {
			res.FirstError = st.firstErr.Error()
		}
	}
	res.Ops = len(all)
	if elapsed > 0 {
		res.Throughput = float64(res.Ops) / elapsed.Seconds()
	}
	res.Latency = summarize(all)
	return res
}
