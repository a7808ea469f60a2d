package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one value", []time.Duration{7}, 50, 7},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 100 is the second largest", hundred, 99, 99 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"p0 is the min", hundred, 0, time.Millisecond},
		{"p99 of 10 is the max", hundred[:10], 99, 10 * time.Millisecond},
		{"p50 of 3 is the middle", []time.Duration{1, 2, 3}, 50, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%d values, %v) = %v, want %v", len(tc.sorted), tc.p, got, tc.want)
			}
		})
	}
}

func TestReportShowsPercentilesRatesAndTargets(t *testing.T) {
	start := time.Unix(1000, 0)
	pods := map[string]*podTimes{}
	for i, name := range []string{"a", "b", "c", "d"} {
		create := start.Add(time.Duration(i) * 10 * time.Millisecond)
		node := "n1"
		if i%2 == 1 {
			node = "n2"
		}
		pods[name] = &podTimes{
			node: node, create: create,
			scheduled: create.Add(20 * time.Millisecond),
			running:   create.Add(time.Duration(i+1) * 300 * time.Millisecond),
			readySeen: create.Add(time.Duration(i+1) * 500 * time.Millisecond),
		}
	}
	for _, tc := range []struct {
		name  string
		rate  float64
		probe bool
		want  []string
	}{
		{"with probe", 0, true, []string{
			"4 pods (n1: 2, n2: 2), 3 concurrent creators, all at once; Ready after an HTTP readiness probe",
			"to scheduled", "20ms", "to Running", "600ms", "1.2s",
			"all Running after 1.23s (3.3 pods/s)", "all Ready after 2.03s (2.0 pods/s)",
			"p99 create→Running 1.2s: Kubernetes SLO ≤ 5s met; Cairn target ≤ 1s MISSED",
		}},
		{"without probe", 0, false, []string{"Ready when the container runs (no probe)"}},
		{"paced", 20, true, []string{"3 concurrent creators, paced at 20 pods/s;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			printReport(&buf, "embedded", newResult(pods, start, 50*time.Millisecond, 3, tc.rate, tc.probe))
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, buf.String())
				}
			}
		})
	}
}
