package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"cairn/ebpf/datapath"

	"golang.org/x/sys/unix"
)

// cleanups undoes the setup in reverse order, also after a failure or an
// interrupt, so no namespace, cgroup, pinned object or rule outlives the
// run.
type cleanups struct {
	steps []cleanupStep
}

type cleanupStep struct {
	what string
	f    func() error
}

func (c *cleanups) add(what string, f func() error) {
	c.steps = append(c.steps, cleanupStep{what, f})
}

func (c *cleanups) run() {
	for i := len(c.steps) - 1; i >= 0; i-- {
		if err := c.steps[i].f(); err != nil {
			fmt.Fprintf(os.Stderr, "proxybench: cleanup: %s: %v\n", c.steps[i].what, err)
		}
	}
	c.steps = nil
}

// benchPrefix starts the name of every namespace, cgroup and mount point
// the benchmark creates; the pid of the run follows.
const benchPrefix = "cairn-bench-"

// reapStale removes what a run killed before its cleanup left behind:
// objects named after a pid that no longer runs.
func reapStale() {
	stale := func(name string) bool {
		rest, ok := strings.CutPrefix(name, benchPrefix)
		if !ok {
			return false
		}
		digits, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(digits)
		if err != nil || pid <= 0 {
			return false
		}
		// Dead, or a zombie: killed and not yet reaped.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, state, _ := strings.Cut(string(stat), ") ")
		return err != nil || strings.HasPrefix(state, "Z")
	}
	if entries, err := os.ReadDir(netnsRunPath); err == nil {
		for _, e := range entries {
			if stale(e.Name()) {
				run("ip", "netns", "del", e.Name())
			}
		}
	}
	if mountinfo, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mountinfo), "\n") {
			pre, post, ok := strings.Cut(line, " - ")
			if f := strings.Fields(pre); ok && strings.HasPrefix(post, "bpf ") && len(f) >= 5 && stale(filepath.Base(f[4])) {
				if unix.Unmount(f[4], unix.MNT_DETACH) == nil {
					os.Remove(f[4])
				}
			}
		}
	}
	if mnt, err := datapath.Cgroup2Mount(); err == nil {
		if entries, err := os.ReadDir(mnt); err == nil {
			for _, e := range entries {
				if e.IsDir() && stale(e.Name()) {
					removeCgroup(filepath.Join(mnt, e.Name()))
				}
			}
		}
	}
}
