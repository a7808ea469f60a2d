package main

import (
	"fmt"
	"time"

	"cairn/internal/storebench"
)

// goal says how a metric is judged: by the cairn/etcd ratio in a direction,
// by an absolute bound on cairn's value, or not at all.
type goal struct {
	higherBetter bool
	ratioTarget  bool
	absMax       time.Duration
	zero         bool
}

// metric extracts one number from a report; ok is false when the report
// lacks the measurement.
type metric struct {
	name  string
	goal  goal
	value func(r *storebench.Report) (float64, bool)
	show  func(v float64) string
}

func throughput(name string, clients int) func(*storebench.Report) (float64, bool) {
	return func(r *storebench.Report) (float64, bool) {
		res, ok := r.Find(name, clients)
		return res.Throughput, ok && res.Ops > 0
	}
}

func latency(name string, clients int, pick func(storebench.Latency) time.Duration) func(*storebench.Report) (float64, bool) {
	return func(r *storebench.Report) (float64, bool) {
		res, ok := r.Find(name, clients)
		return float64(pick(res.Latency)), ok && res.Ops > 0
	}
}

func p50(l storebench.Latency) time.Duration { return l.P50 }
func p99(l storebench.Latency) time.Duration { return l.P99 }

func showRate(v float64) string { return fmt.Sprintf("%.0f/s", v) }
func showDur(v float64) string  { return storebench.FormatDuration(time.Duration(v)) }
func showInt(v float64) string  { return fmt.Sprintf("%.0f", v) }

// metrics lists the table's rows; the ones with targets come from the
// store's performance goals, the rest give context.
func metrics(clients int) []metric {
	many := fmt.Sprintf("%d clients", clients)
	return []metric{
		{"put throughput, " + many, goal{higherBetter: true, ratioTarget: true}, throughput("put", clients), showRate},
		{"put p50, " + many, goal{}, latency("put", clients, p50), showDur},
		{"put p99, " + many, goal{}, latency("put", clients, p99), showDur},
		{"put throughput, 1 client", goal{higherBetter: true}, throughput("put", 1), showRate},
		{"put p50, 1 client", goal{ratioTarget: true}, latency("put", 1, p50), showDur},
		{"put p99, 1 client", goal{}, latency("put", 1, p99), showDur},
		{"linearizable get, " + many, goal{higherBetter: true, ratioTarget: true}, throughput("get-linearizable", clients), showRate},
		{"linearizable get p99, " + many, goal{}, latency("get-linearizable", clients, p99), showDur},
		{"serializable get, " + many, goal{higherBetter: true}, throughput("get-serializable", clients), showRate},
		{"longest write gap, leader kill", goal{absMax: time.Second}, func(r *storebench.Report) (float64, bool) {
			f := r.Failover
			return float64(failoverGap(f)), f != nil
		}, showDur},
		{"acknowledged writes lost", goal{zero: true}, func(r *storebench.Report) (float64, bool) {
			f := r.Failover
			if f == nil || f.Acked == 0 {
				return 0, false
			}
			return float64(f.Lost), true
		}, showInt},
	}
}

// failoverGap is the gap to judge: a cluster that never recovered has an
// unbounded gap, whatever the measured stretch says.
func failoverGap(f *storebench.FailoverResult) time.Duration {
	if f == nil {
		return 0
	}
	if !f.Recovered {
		return max(f.LongestGap, f.Elapsed-f.KilledAt)
	}
	return f.LongestGap
}

// target describes the goal for the table's target column.
func (g goal) target() string {
	switch {
	case g.zero:
		return "= 0"
	case g.absMax > 0:
		return "<= " + storebench.FormatDuration(g.absMax)
	case g.ratioTarget && g.higherBetter:
		return ">= 1.0x"
	case g.ratioTarget:
		return "<= 1.0x"
	}
	return ""
}

// judge says whether one cairn value meets the goal: "ok", "MISS", "n/a"
// when either needed value is missing, or "" when the metric has no goal.
func judge(g goal, ev float64, eok bool, cv float64, cok bool) string {
	if g.target() == "" {
		return ""
	}
	if !cok || g.ratioTarget && (!eok || ev == 0) {
		return "n/a"
	}
	var met bool
	switch {
	case g.zero:
		met = cv == 0
	case g.absMax > 0:
		met = cv <= float64(g.absMax)
	case g.higherBetter:
		met = cv >= ev
	default:
		met = cv <= ev
	}
	if met {
		return "ok"
	}
	return "MISS"
}
