package apibench

import (
	"fmt"
	"time"
)

// Targets are the limits a run is judged against.
type Targets struct {
	// CreateP99, GetP99 and ListP99 bound the 99th-percentile latencies;
	// Kubernetes' SLO is 1 s for single objects (and 30 s for cluster-wide
	// lists, which Cairn holds to 1 s for the namespace's pods).
	CreateP99 time.Duration `json:"create_p99_ns"`
	GetP99    time.Duration `json:"get_p99_ns"`
	ListP99   time.Duration `json:"list_p99_ns"`
	// WatchAllSeen bounds the time until every watcher saw the change.
	WatchAllSeen time.Duration `json:"watch_all_seen_ns"`
	// MaxRSS bounds each server's peak resident memory.
	MaxRSS uint64 `json:"max_rss_bytes"`
}

// DefaultTargets are the control plane's performance targets for 10,000
// pods and 1,000 watchers on a two-core machine.
func DefaultTargets() Targets {
	return Targets{
		CreateP99:    time.Second,
		GetP99:       time.Second,
		ListP99:      time.Second,
		WatchAllSeen: time.Second,
		MaxRSS:       500 << 20,
	}
}

// Outcomes of a Verdict.
const (
	Met         = "met"
	Missed      = "MISSED"
	NotMeasured = "n/a"
)

// Verdict is one target and how the run fared against it.
type Verdict struct {
	What   string `json:"what"`
	Value  string `json:"value"`
	Target string `json:"target"`
	// Result is Met, Missed or NotMeasured.
	Result string `json:"result"`
}

// Verdicts judges the report against its targets, in the order of the
// table.
func (r *Report) Verdicts() []Verdict {
	t := r.Targets
	var out []Verdict
	for _, res := range r.Results {
		limit := t.ListP99
		switch res.Name {
		case "create":
			limit = t.CreateP99
		case "get":
			limit = t.GetP99
		}
		out = append(out, latencyVerdict(res.Name+" p99", res, limit))
	}
	out = append(out, r.watchVerdict())
	if len(r.Memory) == 0 {
		out = append(out, Verdict{What: "server RSS", Value: "not measured: pass --metrics-urls or --server-pids",
			Target: "<= " + FormatBytes(t.MaxRSS), Result: NotMeasured})
	}
	for _, m := range r.Memory {
		v := Verdict{What: "peak RSS " + m.Source, Target: "<= " + FormatBytes(t.MaxRSS), Result: NotMeasured, Value: m.Error}
		if m.Samples > 0 {
			v.Value = FormatBytes(m.Peak)
			v.Result = judge(m.Peak <= t.MaxRSS)
		}
		out = append(out, v)
	}
	return out
}

func latencyVerdict(what string, res Result, limit time.Duration) Verdict {
	v := Verdict{What: what, Target: "<= " + FormatDuration(limit), Result: NotMeasured, Value: "no successful request"}
	if res.Requests > 0 {
		v.Value = FormatDuration(res.Latency.P99)
		v.Result = judge(res.Latency.P99 <= limit)
	}
	return v
}

func (r *Report) watchVerdict() Verdict {
	v := Verdict{What: "watch fan-out, all saw the change", Target: "<= " + FormatDuration(r.Targets.WatchAllSeen),
		Result: NotMeasured, Value: "not run"}
	w := r.Watch
	switch {
	case w == nil:
	case w.Seen < w.Watchers:
		v.Value = fmt.Sprintf("only %d of %d saw it within %s", w.Seen, w.Watchers, FormatDuration(w.Timeout))
		v.Result = Missed
	default:
		v.What = fmt.Sprintf("watch fan-out, all %d saw the change", w.Watchers)
		v.Value = FormatDuration(w.AllSeen)
		v.Result = judge(w.AllSeen <= r.Targets.WatchAllSeen)
	}
	return v
}

func judge(met bool) string {
	if met {
		return Met
	}
	return Missed
}
