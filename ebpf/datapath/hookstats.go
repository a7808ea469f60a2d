package datapath

import (
	"fmt"
	"io"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// HookStats is what the kernel accounted for one program: how often it
// ran and for how long in total. It counts only while runtime statistics
// are enabled (EnableRuntimeStats, or sysctl kernel.bpf_stats_enabled=1).
type HookStats struct {
	Runs    uint64
	Runtime time.Duration
}

// PerRun is the mean run time of the program.
func (h HookStats) PerRun() time.Duration {
	if h.Runs == 0 {
		return 0
	}
	return h.Runtime / time.Duration(h.Runs)
}

// HookStats returns the statistics of each program, by hook name
// (connect4, sendmsg4, ...).
func (d *Datapath) HookStats() (map[string]HookStats, error) {
	out := map[string]HookStats{}
	for _, h := range d.hooks() {
		st, err := h.prog.Stats()
		if err != nil {
			return nil, fmt.Errorf("datapath: %s statistics: %w", h.name, err)
		}
		out[h.name] = HookStats{Runs: st.RunCount, Runtime: st.Runtime}
	}
	return out, nil
}

// EnableRuntimeStats makes the kernel account program run times until the
// returned closer is closed. It costs every BPF program on the machine two
// clock reads per run, so it is for measurements, not for production.
func EnableRuntimeStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("datapath: enable BPF runtime statistics (Linux 5.8+): %w", err)
	}
	return c, nil
}
