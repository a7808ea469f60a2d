package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// v1Controllers are the cgroup v1 controllers a container is placed in:
// memory and cpu for limits, cpuacct and pids for accounting.
func v1Controllers() []string { return []string{"memory", "cpu", "cpuacct", "pids"} }

// cgroupLayout says where the cgroup hierarchies are mounted.
type cgroupLayout struct {
	// v1 maps a controller to the mount point of its hierarchy.
	v1 map[string]string
	// v2 is the cgroup2 mount point, "" if there is none. On hybrid
	// hosts it holds no controllers and serves placement only (eBPF
	// programs attach there).
	v2 string
}

// detectCgroups reads the cgroup mounts from /proc/self/mountinfo.
func detectCgroups() (cgroupLayout, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroupLayout{}, fmt.Errorf("embedded: %w", err)
	}
	defer f.Close()
	l := cgroupLayout{v1: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 25 0:31 / /sys/fs/cgroup/memory rw,... shared:14 - cgroup cgroup rw,memory"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			if l.v2 == "" {
				l.v2 = fields[4]
			}
		case "cgroup":
			for _, opt := range strings.Split(tail[2], ",") {
				if _, seen := l.v1[opt]; !seen {
					l.v1[opt] = fields[4]
				}
			}
		}
	}
	return l, sc.Err()
}

// cgroupPaths are the directories of one cgroup in every hierarchy.
type cgroupPaths struct {
	// V1 maps a controller to its directory.
	V1 map[string]string `json:"v1,omitempty"`
	// V2 is the directory in the cgroup2 hierarchy.
	V2 string `json:"v2,omitempty"`
}

// paths returns the directories of the cgroup at rel (e.g.
// "/cairn/<sandbox>/<container>") under each hierarchy we use.
func (l cgroupLayout) paths(rel string) cgroupPaths {
	p := cgroupPaths{V1: map[string]string{}}
	for _, c := range v1Controllers() {
		if mnt, ok := l.v1[c]; ok {
			p.V1[c] = filepath.Join(mnt, rel)
		}
	}
	if l.v2 != "" {
		p.V2 = filepath.Join(l.v2, rel)
	}
	return p
}

func (p cgroupPaths) dirs() []string {
	var out []string
	for _, c := range v1Controllers() {
		if d, ok := p.V1[c]; ok {
			out = append(out, d)
		}
	}
	if p.V2 != "" {
		out = append(out, p.V2)
	}
	return out
}

// create makes the directories, with their parents.
func (p cgroupPaths) create() error {
	for _, d := range p.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("embedded: creating cgroup %s: %w", d, err)
		}
	}
	return nil
}

// addProcess moves a process into the cgroup in every hierarchy.
func (p cgroupPaths) addProcess(pid int) error {
	for _, d := range p.dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("embedded: placing %d in cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// apply writes memory and CPU limits. A zero limit means unlimited.
func (p cgroupPaths) apply(r *runtimeapi.LinuxContainerResources) error {
	if r == nil {
		r = &runtimeapi.LinuxContainerResources{}
	}
	if d, ok := p.V1["memory"]; ok {
		if err := setMemoryV1(d, r.MemoryLimitInBytes); err != nil {
			return err
		}
	} else if p.V2 != "" && fileExists(filepath.Join(p.V2, "memory.max")) {
		if err := writeCgroup(p.V2, "memory.max", limitOrMax(r.MemoryLimitInBytes)); err != nil {
			return err
		}
	}
	if d, ok := p.V1["cpu"]; ok {
		if r.CpuPeriod > 0 {
			if err := writeCgroup(d, "cpu.cfs_period_us", strconv.FormatInt(r.CpuPeriod, 10)); err != nil {
				return err
			}
		}
		quota := int64(-1)
		if r.CpuQuota > 0 {
			quota = r.CpuQuota
		}
		if err := writeCgroup(d, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)); err != nil {
			return err
		}
		if r.CpuShares > 0 {
			if err := writeCgroup(d, "cpu.shares", strconv.FormatInt(r.CpuShares, 10)); err != nil {
				return err
			}
		}
	} else if p.V2 != "" && fileExists(filepath.Join(p.V2, "cpu.max")) {
		period := r.CpuPeriod
		if period <= 0 {
			period = 100000
		}
		if err := writeCgroup(p.V2, "cpu.max", fmt.Sprintf("%s %d", limitOrMax(r.CpuQuota), period)); err != nil {
			return err
		}
		if r.CpuShares > 0 {
			if err := writeCgroup(p.V2, "cpu.weight", strconv.FormatInt(sharesToWeight(r.CpuShares), 10)); err != nil {
				return err
			}
		}
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
	if err := writeCgroup(dir, "memory.limit_in_bytes", val); err != nil {
		if !memsw {
			return err
		}
		// Raising above the current memsw limit: memsw first.
		if err := writeCgroup(dir, "memory.memsw.limit_in_bytes", val); err != nil {
			return err
		}
		return writeCgroup(dir, "memory.limit_in_bytes", val)
	}
	if memsw {
		return writeCgroup(dir, "memory.memsw.limit_in_bytes", val)
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

func writeCgroup(dir, file, val string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
		return fmt.Errorf("embedded: writing %s to %s: %w", val, filepath.Join(dir, file), err)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// oomKills returns how many processes the kernel's OOM killer killed in
// the cgroup because of its memory limit.
func (p cgroupPaths) oomKills() int {
	if d, ok := p.V1["memory"]; ok {
		return counter(filepath.Join(d, "memory.oom_control"), "oom_kill")
	}
	if p.V2 != "" {
		return counter(filepath.Join(p.V2, "memory.events"), "oom_kill")
	}
	return 0
}

// counter reads "key value" from a flat-keyed cgroup file.
func counter(path, key string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// pids lists the processes in the cgroup.
func (p cgroupPaths) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range p.dirs() {
		raw, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

// killAll SIGKILLs every process left in the cgroup, e.g. one that
// escaped its container's PID namespace teardown by setsid'ing into
// another session, and waits until they are gone.
func (p cgroupPaths) killAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := p.pids()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded: processes %v survive SIGKILL in cgroup %s", pids, p.V2)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remove deletes the directories; a cgroup the kernel still considers
// busy right after its last process died is retried for a moment.
func (p cgroupPaths) remove() error {
	var errs []error
	for _, d := range p.dirs() {
		var err error
		for i := 0; i < 50; i++ {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("embedded: removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
