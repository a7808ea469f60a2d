package main

import (
	"testing"
	"time"
)

func TestPercentileByNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			if got := percentile(s, tt.q); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

func TestSummarizeCountsConnectionsPerSecond(t *testing.T) {
	r := &result{mode: "direct"}
	r.add(sample{Latencies: []time.Duration{3, 1, 2}, Elapsed: time.Second, Failures: 1})
	r.add(sample{Latencies: []time.Duration{4}, Elapsed: time.Second})
	s := summarize(r)
	if s.conns != 4 || s.failures != 1 || s.perSecond != 2 || s.p50 != 2 || s.p99 != 4 {
		t.Errorf("summary = %+v", s)
	}
}
