package agent_test

import (
	"os"
	"runtime/pprof"
	"runtime/trace"
	"testing"
)

// profileWindow starts what the CAIRN_BENCH_* variables ask for (see
// BenchmarkPodStartup) for run prefix, and returns what stops it: the
// profiles then cover the burst alone, not the cluster's start or the
// pods' deletion.
func profileWindow(b *testing.B, prefix string) (stop func()) {
	var stops []func()
	create := func(env string) *os.File {
		f, err := os.Create(os.Getenv(env) + "." + prefix)
		if err != nil {
			b.Fatalf("%s: %v", env, err)
		}
		return f
	}
	if os.Getenv("CAIRN_BENCH_CPUPROFILE") != "" {
		f := create("CAIRN_BENCH_CPUPROFILE")
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if os.Getenv("CAIRN_BENCH_TRACE") != "" {
		f := create("CAIRN_BENCH_TRACE")
		if err := trace.Start(f); err != nil {
			b.Fatal(err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	if fifo := os.Getenv("CAIRN_BENCH_PERF_CTL"); fifo != "" {
		send := func(cmd string) {
			if err := os.WriteFile(fifo, []byte(cmd+"\n"), 0); err != nil {
				b.Fatalf("CAIRN_BENCH_PERF_CTL: %v", err)
			}
		}
		send("enable")
		stops = append(stops, func() { send("disable") })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
