package main

import (
	"fmt"
	"slices"
	"time"
)

// result is what one mode measured over all rounds.
type result struct {
	mode      string
	latencies []time.Duration // one per connection: setup + request/response
	elapsed   time.Duration   // wall time the measuring clients ran
	failures  int
}

func (r *result) add(s sample) {
	r.latencies = append(r.latencies, s.Latencies...)
	r.elapsed += s.Elapsed
	r.failures += s.Failures
}

// percentile returns the q-quantile (0 < q <= 1) by nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// summary is the row printed for a mode.
type summary struct {
	mode      string
	conns     int
	failures  int
	p50, p99  time.Duration
	perSecond float64
}

func summarize(r *result) summary {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	sum := summary{mode: r.mode, conns: len(s), failures: r.failures, p50: percentile(s, 0.50), p99: percentile(s, 0.99)}
	if r.elapsed > 0 {
		sum.perSecond = float64(len(s)) / r.elapsed.Seconds()
	}
	return sum
}

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond)) }
