package apibench

import (
	"math"
	"slices"
	"time"
)

// Latency summarizes the latencies of the successful requests of one
// measurement.
type Latency struct {
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// summarize sorts samples in place and summarizes them.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	return Latency{
		P50: percentile(samples, 50),
		P90: percentile(samples, 90),
		P99: percentile(samples, 99),
		Max: samples[len(samples)-1],
	}
}

// percentile returns the p-th percentile of sorted samples by nearest rank:
// the smallest sample that at least p percent of the samples do not exceed.
// It always returns a latency that was really observed, so that the p99 of
// five list calls is the slowest one rather than a blend.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}
