package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"cairn/internal/storebench"
)

func report(putRate float64, p50 time.Duration, gap time.Duration, lost int) *storebench.Report {
	return &storebench.Report{
		Results: []storebench.Result{
			{Name: "put", Clients: 64, Ops: 100, Throughput: putRate},
			{Name: "put", Clients: 1, Ops: 100, Latency: storebench.Latency{P50: p50}},
		},
		Failover: &storebench.FailoverResult{Acked: 100, Lost: lost, LongestGap: gap, Recovered: true},
	}
}

func TestCompareJudgesCairnAgainstTheTargets(t *testing.T) {
	etcd := report(1000, 2*time.Millisecond, 1500*time.Millisecond, 0)
	tests := []struct {
		name    string
		cairn   *storebench.Report
		metric  string
		ratio   string
		verdict string
	}{
		{"faster puts meet the target", report(1500, time.Millisecond, 300*time.Millisecond, 0), "put throughput, 64 clients", "1.50x", "ok"},
		{"slower puts miss it", report(500, time.Millisecond, 300*time.Millisecond, 0), "put throughput, 64 clients", "0.50x", "MISS"},
		{"lower latency meets it", report(500, time.Millisecond, 300*time.Millisecond, 0), "put p50, 1 client", "0.50x", "ok"},
		{"short gap meets the absolute bound", report(500, time.Millisecond, 300*time.Millisecond, 0), "longest write gap, leader kill", "0.20x", "ok"},
		{"long gap misses it", report(500, time.Millisecond, 1200*time.Millisecond, 0), "longest write gap, leader kill", "0.80x", "MISS"},
		{"a lost write misses", report(500, time.Millisecond, 300*time.Millisecond, 1), "acknowledged writes lost", "", "MISS"},
		{"no cairn run", nil, "put throughput, 64 clients", "", "n/a"},
		{"a measurement neither side ran", report(500, time.Millisecond, 0, 0), "linearizable get, 64 clients", "", "n/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *row
			for _, r := range compare(etcd, tt.cairn, 64) {
				if r.metric == tt.metric {
					got = &r
				}
			}
			if got == nil {
				t.Fatalf("no row %q", tt.metric)
			}
			if got.ratio != tt.ratio || got.verdict != tt.verdict {
				t.Errorf("row %q: ratio %q verdict %q, want %q %q", tt.metric, got.ratio, got.verdict, tt.ratio, tt.verdict)
			}
		})
	}
}

func TestFailoverGapOfAClusterThatNeverRecoveredRunsToTheEnd(t *testing.T) {
	f := &storebench.FailoverResult{LongestGap: 100 * time.Millisecond, KilledAt: time.Second, Elapsed: 31 * time.Second}
	if got := failoverGap(f); got != 30*time.Second {
		t.Errorf("failoverGap = %v, want 30s", got)
	}
	var buf bytes.Buffer
	if err := writeComparison(&buf, compare(nil, nil, 64)); err != nil || !strings.Contains(buf.String(), "cairn/etcd") {
		t.Errorf("writeComparison = %v:\n%s", err, buf.String())
	}
}
