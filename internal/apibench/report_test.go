package apibench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sampleReport is a full run's report in which everything but the third
// server's memory meets its target.
func sampleReport() *Report {
	res := func(name string, p99 time.Duration, items int) Result {
		return Result{Name: name, Clients: 32, Requests: 10000, Throughput: 1316,
			Latency: Latency{P50: p99 / 4, P90: p99 / 2, P99: p99, Max: 2 * p99}, Items: items}
	}
	return &Report{
		Servers:  []string{"https://a:6443", "https://b:6443", "https://c:6443"},
		Settings: Settings{RunID: "abc123", Namespace: "bench", Pods: 10000, Clients: 32, ContentType: "protobuf", SampleInterval: time.Second},
		Results: []Result{
			res("create", 89*time.Millisecond, 0),
			res("get", 36*time.Millisecond, 0),
			res("list", 291*time.Millisecond, 10000),
			res("list, limit 500", 272*time.Millisecond, 10000),
		},
		Watch: &WatchResult{Watchers: 1000, Opened: 1000, Servers: 3, Seen: 1000, Timeout: 30 * time.Second,
			Delay: Latency{P50: 86 * time.Millisecond, P99: 111 * time.Millisecond, Max: 112 * time.Millisecond}, AllSeen: 112 * time.Millisecond},
		Memory: []ServerMemory{
			{Source: "http://a:9090/metrics", Peak: 280 << 20, Last: 270 << 20, Samples: 15},
			{Source: "http://b:9090/metrics", Peak: 288 << 20, Last: 283 << 20, Samples: 15},
			{Source: "http://c:9090/metrics", Peak: 600 << 20, Last: 590 << 20, Samples: 15},
		},
		Cleanup: &Cleanup{Elapsed: 105 * time.Second},
		Targets: DefaultTargets(),
	}
}

func results(vs []Verdict) map[string]string {
	out := map[string]string{}
	for _, v := range vs {
		out[v.What] = v.Result + " " + v.Value
	}
	return out
}

func TestVerdictsJudgeEveryTarget(t *testing.T) {
	got := results(sampleReport().Verdicts())
	want := map[string]string{
		"create p99":                             "met 89.0ms",
		"get p99":                                "met 36.0ms",
		"list p99":                               "met 291ms",
		"list, limit 500 p99":                    "met 272ms",
		"watch fan-out, all 1000 saw the change": "met 112ms",
		"peak RSS http://a:9090/metrics":         "met 280 MiB",
		"peak RSS http://b:9090/metrics":         "met 288 MiB",
		"peak RSS http://c:9090/metrics":         "MISSED 600 MiB",
	}
	for what, w := range want {
		if got[what] != w {
			t.Errorf("%s: %q, want %q", what, got[what], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("verdicts %v, want exactly %v", got, want)
	}
}

func TestVerdictsForMissingAndPartialMeasurements(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Report)
		what   string
		want   string
	}{
		{"slow creates miss", func(r *Report) { r.Results[0].Latency.P99 = 1500 * time.Millisecond }, "create p99", Missed},
		{"exactly the limit is met", func(r *Report) { r.Results[2].Latency.P99 = time.Second }, "list p99", Met},
		{"no successful get", func(r *Report) { r.Results[1].Requests = 0 }, "get p99", NotMeasured},
		{"a watcher that never saw the change misses", func(r *Report) { r.Watch.Seen, r.Watch.AllSeen = 998, 0 }, "watch fan-out, all saw the change", Missed},
		{"slow fan-out misses", func(r *Report) { r.Watch.AllSeen = 2 * time.Second }, "watch fan-out, all 1000 saw the change", Missed},
		{"no watch run", func(r *Report) { r.Watch = nil }, "watch fan-out, all saw the change", NotMeasured},
		{"no memory source", func(r *Report) { r.Memory = nil }, "server RSS", NotMeasured},
		{"unreadable server", func(r *Report) { r.Memory[0] = ServerMemory{Source: "pid 7", Error: "gone"} }, "peak RSS pid 7", NotMeasured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleReport()
			tt.change(r)
			got, ok := results(r.Verdicts())[tt.what]
			if !ok || !strings.HasPrefix(got, tt.want+" ") {
				t.Errorf("%s: %q, want %s", tt.what, got, tt.want)
			}
		})
	}
}

func TestWriteTableShowsFiguresAndVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"API benchmark: 3 server(s), 10000 pods in namespace bench, 32 clients, protobuf, run abc123",
		"measurement", "create", "1316", "89.0ms",
		"writes: 1316 pod creates per second with 32 clients",
		"list, limit 500", "10000",
		"watch fan-out: 1000 of 1000 watches opened over 3 server(s)",
		"all saw it after 112ms",
		"http://c:9090/metrics  600 MiB",
		"targets:", "<= 1.00s", "<= 500 MiB", "MISSED",
		"deletecollection of the namespace's pods took 105s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteTableSaysWhichWatchersMissed(t *testing.T) {
	r := sampleReport()
	r.Watch.Seen, r.Watch.AllSeen, r.Watch.Errors, r.Watch.FirstError = 990, 0, 10, "open: too many requests"
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 did not see it within 30.0s", "10 watch error(s), first: open: too many requests", "only 990 of 1000 saw it"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestWriteJSONCarriesTheVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Settings Settings
		Results  []Result
		Watch    WatchResult
		Verdicts []Verdict
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	if got.Settings.RunID != "abc123" || len(got.Results) != 4 || got.Watch.AllSeen != 112*time.Millisecond || len(got.Verdicts) != 8 {
		t.Errorf("decoded %+v", got)
	}
	if got.Results[0].Latency.P99 != 89*time.Millisecond {
		t.Errorf("create p99 %v, want 89ms in nanoseconds", got.Results[0].Latency.P99)
	}
}
