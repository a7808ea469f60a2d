package apibench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const exposition = `# HELP process_resident_memory_bytes_total_fake A metric whose name only starts the same.
process_resident_memory_bytes_total_fake 1
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 2.93601280e+08
process_virtual_memory_bytes 1e+09
`

func TestParseMetricFindsTheExactName(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    float64
		wantErr string
	}{
		{"exponent form among look-alikes", exposition, 293601280, ""},
		{"with a timestamp", "process_resident_memory_bytes 1024 1700000000000\n", 1024, ""},
		{"missing", "go_goroutines 12\n", 0, "no process_resident_memory_bytes"},
		{"not a number", "process_resident_memory_bytes lots\n", 0, "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMetric(strings.NewReader(tt.text), rssMetric)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseMetric = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseProcStatusRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    uint64
		wantErr bool
	}{
		{"kB to bytes", "Name:\tcairn\nVmPeak:\t 900000 kB\nVmRSS:\t  286720 kB\nVmData:\t1 kB\n", 286720 << 10, false},
		{"kernel thread has none", "Name:\tkthreadd\nState:\tS\n", 0, true},
		{"odd unit", "VmRSS:\t12 MB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatusRSS(strings.NewReader(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseProcStatusRSS = %d, %v; want %d (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestReadProcRSSOfThisProcess(t *testing.T) {
	b, err := readProcRSS(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if b < 1<<20 {
		t.Errorf("this test process's RSS is %d bytes, implausibly small", b)
	}
}

// TestSamplerKeepsPeakAndLast serves a growing then shrinking RSS from a
// real HTTP endpoint and checks the sampler's view of it.
func TestSamplerKeepsPeakAndLast(t *testing.T) {
	values := []int{100, 300, 200}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := min(int(n.Add(1))-1, len(values)-1)
		fmt.Fprintf(w, "process_resident_memory_bytes %d\n", values[i]<<20)
	}))
	defer srv.Close()
	cfg, err := Config{Kubeconfig: "k", MetricsURLs: []string{srv.URL, "http://127.0.0.1:1/metrics"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := startSampler(context.Background(), memorySources(cfg), time.Millisecond)
	for n.Load() < int64(len(values)) {
		time.Sleep(time.Millisecond)
	}
	mem := s.finish(context.Background())
	if len(mem) != 2 {
		t.Fatalf("got %d servers, want 2", len(mem))
	}
	if m := mem[0]; m.Peak != 300<<20 || m.Last != 200<<20 || m.Source != srv.URL+"/metrics" || m.Error != "" {
		t.Errorf("first server: %+v, want peak 300 MiB, last 200 MiB from %s/metrics", m, srv.URL)
	}
	if m := mem[1]; m.Samples != 0 || m.Error == "" {
		t.Errorf("unreachable server: %+v, want no samples and an error", m)
	}
}

func TestSourcesPreferMetricsOverPIDs(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"metrics only", Config{MetricsURLs: []string{"http://a:1/metrics"}}, []string{"http://a:1/metrics"}},
		{"both: metrics win", Config{MetricsURLs: []string{"http://a:1/metrics"}, ServerPIDs: []int{42}}, []string{"http://a:1/metrics"}},
		{"pids", Config{ServerPIDs: []int{42, 43}}, []string{"pid 42", "pid 43"}},
		{"none", Config{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range memorySources(tt.cfg) {
				got = append(got, s.name)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("sources %v, want %v", got, tt.want)
			}
		})
	}
}
