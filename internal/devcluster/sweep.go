package devcluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// sweepTimeout bounds each wait of a sweep for processes to die.
const sweepTimeout = 10 * time.Second

// sweep removes what a cluster in the state directory may have left
// behind once its servers and agents are stopped: the pods' processes
// and the runtime's helpers, the mounts under the state directory (the
// bpf filesystem with the agents' pinned eBPF links, volumes) and, with
// host set, everything with the fixed names: the pods' and nodes'
// network namespaces, the bridge and veths, the iptables rules and the
// cgroups. It is idempotent and keeps going past errors.
func sweep(l Layout, host bool, log *slog.Logger) error {
	var errs []error
	var cgroups []string
	if host {
		mounts, err := readMounts()
		if err != nil {
			return err
		}
		for _, m := range cgroupMounts(mounts) {
			cgroups = append(cgroups, filepath.Join(m, CgroupRoot))
		}
		for _, cg := range cgroups {
			if err := killCgroupTree(cg, sweepTimeout); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := killClusterProcesses(l.Dir, sweepTimeout); err != nil {
		errs = append(errs, err)
	}
	// The pods' namespaces of other agents on this host, under other
	// node names, are not ours.
	podNetNS, _ := filepath.Glob(filepath.Join(PodNetNSRoot, NamePrefix+"*"))
	below := []string{l.Dir}
	if host {
		below = append(below, podNetNS...)
	}
	if err := unmountBelow(below...); err != nil {
		errs = append(errs, err)
	}
	if host {
		for _, d := range podNetNS {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("devcluster: %w", err))
			}
		}
		if err := removeHostNetwork(); err != nil {
			errs = append(errs, err)
		}
		if err := removeHostRules(); err != nil {
			errs = append(errs, err)
		}
		for _, cg := range cgroups {
			if err := removeCgroupTree(cg, sweepTimeout); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(l.BPF()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("devcluster: %w", err))
	}
	err := errors.Join(errs...)
	if err != nil {
		log.Warn("sweep left something behind", "err", err)
	}
	return err
}

// killClusterProcesses kills the servers, agents and runtime helpers
// still working in dir (see isClusterProcess) and waits for them to go.
func killClusterProcesses(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range pids() {
			if pid != os.Getpid() && isClusterProcess(cmdline(pid), dir) {
				if state, _, err := procStat(pid); err == nil && state != "Z" {
					left = append(left, pid)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devcluster: processes %v of %s did not die", left, dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
