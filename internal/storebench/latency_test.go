package storebench

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// oneToHundred is 1..100 ms, so that the p-th percentile is p ms.
func oneToHundred() []time.Duration {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = ms(i + 1)
	}
	return s
}

func TestPercentileIsNearestRank(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample is every percentile", []time.Duration{ms(7)}, 99, ms(7)},
		{"p50 of 1..100", oneToHundred(), 50, ms(50)},
		{"p99 of 1..100", oneToHundred(), 99, ms(99)},
		{"p100 is the max", oneToHundred(), 100, ms(100)},
		{"p0 is the min", oneToHundred(), 0, ms(1)},
		{"p99 of ten samples is the max", oneToHundred()[:10], 99, ms(10)},
		{"p50 of four samples is the second", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 50, ms(2)},
		{"p90 rounds up", []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(5)}, 90, ms(5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("percentile(p%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeSortsAndAverages(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    Latency
	}{
		{"empty", nil, Latency{}},
		{"unsorted", []time.Duration{ms(30), ms(10), ms(20)},
			Latency{Mean: ms(20), P50: ms(20), P90: ms(30), P99: ms(30), Max: ms(30)}},
		{"1..100", oneToHundred(),
			Latency{Mean: 50500 * time.Microsecond, P50: ms(50), P90: ms(90), P99: ms(99), Max: ms(100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.samples); got != tt.want {
				t.Errorf("summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}
