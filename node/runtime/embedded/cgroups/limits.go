package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Resources are a container's CPU and memory limits, in the units of
// the CRI's LinuxContainerResources. Zero means unset: no limit, or the
// kernel's default.
type Resources struct {
	MemoryLimit int64 // bytes
	CPUPeriod   int64 // microseconds
	CPUQuota    int64 // microseconds per period
	CPUShares   int64 // cgroup v1 cpu.shares
}

// Apply writes memory and CPU limits.
func (p Paths) Apply(r Resources) error {
	if d, ok := p.V1["memory"]; ok {
		if err := setMemoryV1(d, r.MemoryLimit); err != nil {
			return err
		}
	} else if p.V2 != "" && fileExists(filepath.Join(p.V2, "memory.max")) {
		if err := write(p.V2, "memory.max", limitOrMax(r.MemoryLimit)); err != nil {
			return err
		}
	}
	if d, ok := p.V1["cpu"]; ok {
		return setCPUV1(d, r)
	}
	if p.V2 != "" && fileExists(filepath.Join(p.V2, "cpu.max")) {
		return setCPUV2(p.V2, r)
	}
	return nil
}

func setCPUV1(dir string, r Resources) error {
	if r.CPUPeriod > 0 {
		if err := write(dir, "cpu.cfs_period_us", strconv.FormatInt(r.CPUPeriod, 10)); err != nil {
			return err
		}
	}
	quota := int64(-1)
	if r.CPUQuota > 0 {
		quota = r.CPUQuota
	}
	if err := write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)); err != nil {
		return err
	}
	if r.CPUShares > 0 {
		return write(dir, "cpu.shares", strconv.FormatInt(r.CPUShares, 10))
	}
	return nil
}

func setCPUV2(dir string, r Resources) error {
	period := r.CPUPeriod
	if period <= 0 {
		period = 100000
	}
	if err := write(dir, "cpu.max", fmt.Sprintf("%s %d", limitOrMax(r.CPUQuota), period)); err != nil {
		return err
	}
	if r.CPUShares > 0 {
		return write(dir, "cpu.weight", strconv.FormatInt(sharesToWeight(r.CPUShares), 10))
	}
	return nil
}

// setMemoryV1 sets the memory limit and, where swap is accounted, the
// memory+swap limit to the same value, so that a container cannot
// escape its limit into swap. The kernel wants memsw >= memory at all
// times, so the order depends on the direction of the change.
func setMemoryV1(dir string, limit int64) error {
	val := "-1"
	if limit > 0 {
		val = strconv.FormatInt(limit, 10)
	}
	memsw := fileExists(filepath.Join(dir, "memory.memsw.limit_in_bytes"))
	if err := write(dir, "memory.limit_in_bytes", val); err != nil {
		if !memsw {
			return err
		}
		// Raising above the current memsw limit: memsw first.
		if err := write(dir, "memory.memsw.limit_in_bytes", val); err != nil {
			return err
		}
		return write(dir, "memory.limit_in_bytes", val)
	}
	if memsw {
		return write(dir, "memory.memsw.limit_in_bytes", val)
	}
	return nil
}

func limitOrMax(v int64) string {
	if v > 0 {
		return strconv.FormatInt(v, 10)
	}
	return "max"
}

// sharesToWeight maps cgroup v1 cpu.shares [2, 262144] to cgroup v2
// cpu.weight [1, 10000], as the kubelet and runc do.
func sharesToWeight(shares int64) int64 {
	return 1 + ((shares-2)*9999)/262142
}

func write(dir, file, val string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
		return fmt.Errorf("cgroups: writing %s to %s: %w", val, filepath.Join(dir, file), err)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
