package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Paths are the directories of one cgroup in every hierarchy. It is
// part of a container's spec.json: the JSON names must not change.
type Paths struct {
	// V1 maps a controller to its directory.
	V1 map[string]string `json:"v1,omitempty"`
	// V2 is the directory in the cgroup2 hierarchy.
	V2 string `json:"v2,omitempty"`
}

func (p Paths) dirs() []string {
	var out []string
	for _, c := range V1Controllers() {
		if d, ok := p.V1[c]; ok {
			out = append(out, d)
		}
	}
	if p.V2 != "" {
		out = append(out, p.V2)
	}
	return out
}

// Create makes the directories, with their parents.
func (p Paths) Create() error {
	for _, d := range p.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroups: creating cgroup %s: %w", d, err)
		}
	}
	return nil
}

// AddProcess moves a process into the cgroup in every hierarchy.
func (p Paths) AddProcess(pid int) error {
	for _, d := range p.dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("cgroups: placing %d in cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// ProcsFiles returns the cgroup.procs file of the cgroup in every
// hierarchy. A process that writes "0" to one moves itself there, which
// a child can do between its fork and its exec with files its parent
// opened.
func (p Paths) ProcsFiles() []string {
	dirs := p.dirs()
	for i, d := range dirs {
		dirs[i] = filepath.Join(d, "cgroup.procs")
	}
	return dirs
}

// OOMKills returns how many processes the kernel's OOM killer killed in
// the cgroup because of its memory limit.
func (p Paths) OOMKills() int {
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

// PIDs lists the processes in the cgroup.
func (p Paths) PIDs() []int {
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

// KillAll SIGKILLs every process left in the cgroup, e.g. one that
// escaped its container's PID namespace teardown by setsid'ing into
// another session, and waits until they are gone.
func (p Paths) KillAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := p.PIDs()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: processes %v survive SIGKILL in cgroup %s", pids, p.V2)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Remove deletes the directories; a cgroup the kernel still considers
// busy right after its last process died is retried for a moment.
func (p Paths) Remove() error {
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
			errs = append(errs, fmt.Errorf("cgroups: removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
