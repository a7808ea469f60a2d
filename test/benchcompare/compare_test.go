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

// findRow returns the row of the named metric.
func findRow(t *testing.T, c comparison, metric string) row {
	t.Helper()
	for _, r := range c.rows {
		if r.metric == metric {
			return r
		}
	}
	t.Fatalf("no row %q", metric)
	return row{}
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
		{"a context metric has no verdict", report(500, time.Millisecond, 0, 0), "put p99, 1 client", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := findRow(t, compare(etcd, []variant{{"cairn boltdb", tt.cairn}}, 64), tt.metric)
			if len(r.cairn) != 1 {
				t.Fatalf("row %q has %d cairn cells, want 1", tt.metric, len(r.cairn))
			}
			if got := r.cairn[0]; got.ratio != tt.ratio || got.verdict != tt.verdict {
				t.Errorf("row %q: ratio %q verdict %q, want %q %q", tt.metric, got.ratio, got.verdict, tt.ratio, tt.verdict)
			}
		})
	}
}

func TestCompareJudgesEachLogStoreOnItsOwn(t *testing.T) {
	etcd := report(1000, 2*time.Millisecond, 1500*time.Millisecond, 0)
	variants := []variant{
		{"cairn boltdb", report(800, 3*time.Millisecond, 400*time.Millisecond, 0)},
		{"cairn wal", report(1200, time.Millisecond, 1100*time.Millisecond, 0)},
		{"cairn never ran", nil},
	}
	tests := []struct {
		metric string
		target string
		want   []cell
	}{
		{"put throughput, 64 clients", ">= 1.0x", []cell{{"800/s", "0.80x", "MISS"}, {"1200/s", "1.20x", "ok"}, {"n/a", "", "n/a"}}},
		{"put p50, 1 client", "<= 1.0x", []cell{{"3.00ms", "1.50x", "MISS"}, {"1.00ms", "0.50x", "ok"}, {"n/a", "", "n/a"}}},
		{"longest write gap, leader kill", "<= 1.00s", []cell{{"400ms", "0.27x", "ok"}, {"1.10s", "0.73x", "MISS"}, {"n/a", "", "n/a"}}},
	}
	c := compare(etcd, variants, 64)
	if got := strings.Join(c.variants, ","); got != "cairn boltdb,cairn wal,cairn never ran" {
		t.Errorf("variants = %s, want the order given", got)
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			r := findRow(t, c, tt.metric)
			if r.target != tt.target {
				t.Errorf("target %q, want %q", r.target, tt.target)
			}
			if len(r.cairn) != len(tt.want) {
				t.Fatalf("%d cairn cells, want %d", len(r.cairn), len(tt.want))
			}
			for i, w := range tt.want {
				if r.cairn[i] != w {
					t.Errorf("%s: %+v, want %+v", variants[i].label, r.cairn[i], w)
				}
			}
		})
	}
}

func TestCompareWithoutEtcdJudgesOnlyAbsoluteTargets(t *testing.T) {
	c := compare(nil, []variant{{"cairn wal", report(1200, time.Millisecond, 300*time.Millisecond, 0)}}, 64)
	tests := []struct {
		metric  string
		verdict string
	}{
		{"put throughput, 64 clients", "n/a"},
		{"longest write gap, leader kill", "ok"},
		{"acknowledged writes lost", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			r := findRow(t, c, tt.metric)
			if r.etcd != "n/a" || r.cairn[0].ratio != "" || r.cairn[0].verdict != tt.verdict {
				t.Errorf("etcd %q ratio %q verdict %q, want n/a, no ratio, %q", r.etcd, r.cairn[0].ratio, r.cairn[0].verdict, tt.verdict)
			}
		})
	}
}

func TestComparisonTableHasAColumnGroupPerVariant(t *testing.T) {
	etcd := report(1000, 2*time.Millisecond, 1500*time.Millisecond, 0)
	variants := []variant{
		{"cairn boltdb", report(800, 3*time.Millisecond, 400*time.Millisecond, 0)},
		{"cairn wal", report(1200, time.Millisecond, 300*time.Millisecond, 0)},
	}
	var buf bytes.Buffer
	if err := writeComparison(&buf, compare(etcd, variants, 64)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	tests := []struct {
		name string
		line int
		want string
	}{
		{"header", 0, "metric target etcd cairn boltdb ratio met cairn wal ratio met"},
		{"put throughput", 1, "put throughput, 64 clients >= 1.0x 1000/s 800/s 0.80x MISS 1200/s 1.20x ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(strings.Fields(lines[tt.line]), " "); got != tt.want {
				t.Errorf("line %d = %q, want %q\n%s", tt.line, got, tt.want, buf.String())
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
	if err := writeComparison(&buf, compare(nil, nil, 64)); err != nil || !strings.Contains(buf.String(), "etcd") {
		t.Errorf("writeComparison = %v:\n%s", err, buf.String())
	}
}

func TestComparisonTableLinesHaveNoTrailingSpaces(t *testing.T) {
	etcd := report(1000, 2*time.Millisecond, 1500*time.Millisecond, 0)
	var buf bytes.Buffer
	if err := writeComparison(&buf, compare(etcd, []variant{{"cairn wal", etcd}}, 64)); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("line %d ends with spaces: %q", i, line)
		}
	}
}
