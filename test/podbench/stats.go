package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Targets of the pod startup latency, create→Running at the 99th
// percentile: Kubernetes' SLO, and ours for the embedded runtime.
const (
	kubernetesSLO = 5 * time.Second
	cairnTarget   = time.Second
)

// result is what one measurement found.
type result struct {
	pods, creators int
	rate           float64 // creation pace in pods/s; 0 means all at once
	probe          bool
	// perNode counts the pods of each node.
	perNode map[string]int
	// toScheduled, toRunning and toReady are each pod's time from its
	// create call to the watch seeing it bound, Running and Ready,
	// sorted.
	toScheduled, toRunning, toReady []time.Duration
	// created is how long the creators took; allRunning and allReady
	// how long from the first create until the last pod was seen
	// Running and Ready.
	created, allRunning, allReady time.Duration
	// cpu is the CPU time the whole machine (servers, agents, shims,
	// containers and this client) spent from the first create until the
	// last pod was seen Running.
	cpu time.Duration
	// writes is how many writes the store took from the first create
	// until the last pod was seen Ready.
	writes int64
}

func newResult(pods map[string]*podTimes, start time.Time, created time.Duration, creators int, rate float64, probe bool) *result {
	r := &result{pods: len(pods), creators: creators, rate: rate, probe: probe, created: created, perNode: map[string]int{}}
	for _, p := range pods {
		r.perNode[p.node]++
		r.toScheduled = append(r.toScheduled, p.scheduled.Sub(p.create))
		r.toRunning = append(r.toRunning, p.running.Sub(p.create))
		r.toReady = append(r.toReady, p.readySeen.Sub(p.create))
		r.allRunning = max(r.allRunning, p.running.Sub(start))
		r.allReady = max(r.allReady, p.readySeen.Sub(start))
	}
	for _, d := range [][]time.Duration{r.toScheduled, r.toRunning, r.toReady} {
		slices.Sort(d)
	}
	return r
}

// percentile is the nearest-rank p-th percentile of sorted: the
// smallest value that at least p percent of the values do not exceed.
// Over 100 values, the 99th is the second largest.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// rate is n per second over d.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func printReport(w io.Writer, runtime string, r *result) {
	nodes := make([]string, 0, len(r.perNode))
	for n, c := range r.perNode {
		nodes = append(nodes, fmt.Sprintf("%s: %d", n, c))
	}
	sort.Strings(nodes)
	readiness := "Ready when the container runs (no probe)"
	if r.probe {
		readiness = "Ready after an HTTP readiness probe every 1s"
	}
	pace := "all at once"
	if r.rate > 0 {
		pace = fmt.Sprintf("paced at %g pods/s", r.rate)
	}
	fmt.Fprintf(w, "pod startup, runtime %s: %d pods (%s), %d concurrent creators, %s; %s\n",
		runtime, r.pods, strings.Join(nodes, ", "), r.creators, pace, readiness)
	fmt.Fprintf(w, "  %-18s %9s %9s %9s\n", "from the create", "p50", "p99", "max")
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{{"to scheduled", r.toScheduled}, {"to Running", r.toRunning}, {"to Ready", r.toReady}} {
		fmt.Fprintf(w, "  %-18s %9s %9s %9s\n", row.name, ms(percentile(row.d, 50)), ms(percentile(row.d, 99)), ms(percentile(row.d, 100)))
	}
	fmt.Fprintf(w, "  created in %s (%.1f pods/s); all Running after %s (%.1f pods/s); all Ready after %s (%.1f pods/s)\n",
		ms(r.created), rate(r.pods, r.created), ms(r.allRunning), rate(r.pods, r.allRunning), ms(r.allReady), rate(r.pods, r.allReady))
	pods := max(r.pods, 1)
	fmt.Fprintf(w, "  the machine's CPU from the first create to the last Running: %s, %s per pod; %.1f store writes per pod to the last Ready\n",
		r.cpu.Round(10*time.Millisecond), (r.cpu / time.Duration(pods)).Round(100*time.Microsecond), float64(r.writes)/float64(pods))
	p99 := percentile(r.toRunning, 99)
	fmt.Fprintf(w, "  p99 create→Running %s: Kubernetes SLO ≤ %s %s; Cairn target ≤ %s %s\n",
		ms(p99), kubernetesSLO, verdict(p99 <= kubernetesSLO), cairnTarget, verdict(p99 <= cairnTarget))
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
