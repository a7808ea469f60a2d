package storebench

import (
	"math"
	"slices"
	"time"
)

// Latency summarizes the latencies of the successful requests of one
// measurement.
type Latency struct {
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
}

// summarize sorts samples in place and summarizes them.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Latency{
		Mean: sum / time.Duration(len(samples)),
		P50:  percentile(samples, 50),
		P90:  percentile(samples, 90),
		P99:  percentile(samples, 99),
		Max:  samples[len(samples)-1],
	}
}

// percentile returns the p-th percentile of sorted samples by the nearest-rank
// method: the smallest sample that at least p percent of samples do not
// exceed. Unlike interpolation it always returns a latency that was really
// observed, which keeps p99 honest on small runs.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}
