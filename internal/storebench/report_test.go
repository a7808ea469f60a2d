package storebench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestFormatDurationKeepsThreeDigits(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{1500 * time.Nanosecond, "1.50µs"},
		{123456 * time.Microsecond, "123ms"},
		{999900 * time.Microsecond, "1000ms"},
		{12345 * time.Microsecond, "12.3ms"},
		{1490 * time.Millisecond, "1.49s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatDuration(tt.d); got != tt.want {
				t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func sampleReport() *Report {
	cfg, _ := Config{Endpoints: []string{"a:1", "b:2", "c:3"}, KillCommand: "true"}.withDefaults()
	r := newReport(cfg)
	r.Results = []Result{
		{Name: "put", Clients: 64, Ops: 7416, Throughput: 3683.2, Latency: Latency{P50: 16 * time.Millisecond, P99: 39600 * time.Microsecond}},
		{Name: "put", Clients: 1, Ops: 1476, Errors: 2, FirstError: "etcdserver: request timed out", Throughput: 738},
	}
	r.Failover = &FailoverResult{
		Writers: 64, KilledMember: "e3", KilledEndpoint: "http://127.0.0.1:3", NewLeader: "e2",
		KilledAt: time.Second, Elapsed: 3 * time.Second, Acked: 6315, Failed: 211, Recovered: true,
		LongestGap: 1490 * time.Millisecond, GapFrom: time.Second, Verified: 6313, Lost: 2,
		LostKeys: []string{"/storebench/f/0001/0000000007", "/storebench/f/0002/0000000009"},
	}
	return r
}

func TestWriteTableShowsEveryMeasurement(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	tests := []struct {
		name, want string
	}{
		{"settings", "3 endpoint(s), 32-byte keys, 256-byte values, keyspace 10000, 8 conns"},
		{"put row", "put          64       7416      0       3683   0     16.0ms  39.6ms"},
		{"first error", "put (1 clients): first error: etcdserver: request timed out"},
		{"killed leader", "killed leader e3 (http://127.0.0.1:3) at 1.00s; new leader e2"},
		{"gap", "longest write gap     1.49s (from 1.00s to 2.49s)"},
		{"lost writes", "acknowledged lost     2 of 6315 (e.g. /storebench/f/0001/0000000007, /storebench/f/0002/0000000009); 6313 read back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(out, tt.want) {
				t.Errorf("table lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

func TestWriteJSONRoundTrips(t *testing.T) {
	want := sampleReport()
	var buf bytes.Buffer
	if err := want.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("report JSON does not parse: %v\n%s", err, buf.String())
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"results", len(got.Results) == 2 && got.Results[0].Latency.P99 == want.Results[0].Latency.P99},
		{"failover", got.Failover != nil && got.Failover.LongestGap == want.Failover.LongestGap && got.Failover.Lost == 2},
		{"settings", got.Settings == want.Settings},
		{"field names for machines", strings.Contains(buf.String(), `"ops_per_sec": 3683.2`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("JSON round trip lost %s:\n%s", tt.name, buf.String())
			}
		})
	}
	if res, ok := got.Find("put", 1); !ok || res.Ops != 1476 {
		t.Errorf("Find(put, 1) = %+v, %v", res, ok)
	}
}
