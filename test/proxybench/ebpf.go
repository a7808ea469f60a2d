package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"cairn/ebpf/datapath"

	"golang.org/x/sys/unix"
)

// ebpfSetup is the eBPF datapath serving the benchmark's services to the
// processes of one cgroup.
type ebpfSetup struct {
	dp      *datapath.Datapath
	cgroup  string
	took    time.Duration
	entries int
	writes  uint64
}

// setupEBPF creates a cgroup under the cgroup2 mount, programs the
// services and attaches. Pins go to a private bpffs mount, so nothing is
// left under /sys/fs/bpf.
func setupEBPF(prefix string, svcs []benchService, cleanup *cleanups) (*ebpfSetup, error) {
	mnt, err := datapath.Cgroup2Mount()
	if err != nil {
		return nil, err
	}
	cg := filepath.Join(mnt, prefix)
	if err := os.Mkdir(cg, 0o755); err != nil {
		return nil, err
	}
	cleanup.add("remove cgroup "+cg, func() error { return removeCgroup(cg) })

	bpffs, err := os.MkdirTemp("", prefix+"-bpffs-")
	if err != nil {
		return nil, err
	}
	cleanup.add("remove "+bpffs, func() error { return os.Remove(bpffs) })
	if err := unix.Mount("bpf", bpffs, "bpf", 0, "mode=0700"); err != nil {
		return nil, fmt.Errorf("mount bpffs: %w", err)
	}
	cleanup.add("unmount "+bpffs, func() error { return unix.Unmount(bpffs, unix.MNT_DETACH) })

	cfg := datapath.Config{CgroupPath: cg, PinPath: filepath.Join(bpffs, "bench")}
	if err := datapath.CheckSupport(cfg); err != nil {
		return nil, err
	}
	dp, err := datapath.Open(cfg)
	if err != nil {
		return nil, err
	}
	cleanup.add("uninstall eBPF datapath", dp.Uninstall)

	var want []datapath.Service
	for _, s := range svcs {
		want = append(want, datapath.Service{
			Frontend: datapath.Frontend{Addr: s.vip, Port: s.port, Proto: datapath.TCP},
			Backends: append([]netip.AddrPort(nil), s.endpoints...),
		})
	}
	start := time.Now()
	if err := dp.Sync(want); err != nil {
		return nil, err
	}
	took := time.Since(start)
	if err := dp.Attach(); err != nil {
		return nil, err
	}
	st := dp.Stats()
	return &ebpfSetup{dp: dp, cgroup: cg, took: took, entries: st.SvcEntries + st.BackendEntries, writes: st.Writes.Total()}, nil
}

// removeCgroup kills what is left in it and removes it; rmdir fails while
// a process is still exiting.
func removeCgroup(path string) error {
	os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0)
	var err error
	for range 100 {
		if err = syscall.Rmdir(path); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// programCost runs connections through the eBPF mode with the kernel's
// runtime statistics on, and returns the mean run time of the connect4
// program: the datapath's own cost per connection, free of the noise that
// end-to-end latencies carry. It runs apart from the measured rounds
// because the statistics slow every BPF program down a little.
func programCost(ctx context.Context, eb *ebpfSetup, spec childSpec) (datapath.HookStats, error) {
	var cost datapath.HookStats
	stats, err := datapath.EnableRuntimeStats()
	if err != nil {
		return cost, err
	}
	defer stats.Close()
	before, err := eb.dp.HookStats()
	if err != nil {
		return cost, err
	}
	if _, err := measure(ctx, spec, eb.cgroup); err != nil {
		return cost, err
	}
	after, err := eb.dp.HookStats()
	if err != nil {
		return cost, err
	}
	b, a := before["connect4"], after["connect4"]
	return datapath.HookStats{Runs: a.Runs - b.Runs, Runtime: a.Runtime - b.Runtime}, nil
}
