// Package parallelize runs per-node work of a scheduling cycle on a small
// pool of goroutines.
package parallelize

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// minPiecesPerWorker keeps a goroutine from being started for less work
// than it costs to start one: filtering a node is a few hundred
// nanoseconds.
const minPiecesPerWorker = 64

// Parallelizer runs work over at most Workers goroutines.
type Parallelizer struct {
	workers int
}

// New returns a parallelizer of workers goroutines (at least one).
func New(workers int) Parallelizer {
	return Parallelizer{workers: max(1, workers)}
}

// Workers is the pool size.
func (p Parallelizer) Workers() int { return p.workers }

// Until calls fn(i) for every i in [0, pieces), in chunks spread over the
// workers, and returns when all calls have returned or ctx is done (calls
// then stop being started). Small jobs run on the calling goroutine.
func (p Parallelizer) Until(ctx context.Context, pieces int, fn func(i int)) {
	if pieces <= 0 {
		return
	}
	workers := min(p.workers, pieces/minPiecesPerWorker)
	if workers <= 1 {
		for i := 0; i < pieces; i++ {
			if ctx.Err() != nil {
				return
			}
			fn(i)
		}
		return
	}
	// Chunks of about sqrt(pieces) balance the load without contending on
	// the counter for every piece.
	chunk := max(1, int(math.Sqrt(float64(pieces))))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= pieces {
					return
				}
				for i := start; i < min(start+chunk, pieces); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}
