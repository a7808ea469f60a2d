package apibench

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentileIsAnObservedSampleByNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one sample is every percentile", []time.Duration{ms(7)}, 50, ms(7)},
		{"p50 of 100", hundred, 50, ms(50)},
		{"p99 of 100", hundred, 99, ms(99)},
		{"p100 is the max", hundred, 100, ms(100)},
		{"p0 is the min", hundred, 0, ms(1)},
		{"p99 of five lists is the slowest", []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(500)}, 99, ms(500)},
		{"p50 of five is the third", []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(500)}, 50, ms(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeSortsUnorderedSamples(t *testing.T) {
	got := summarize([]time.Duration{ms(30), ms(10), ms(20), ms(40)})
	want := Latency{P50: ms(20), P90: ms(40), P99: ms(40), Max: ms(40)}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if (summarize(nil) != Latency{}) {
		t.Error("summarize(nil) is not zero")
	}
}
