package devcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMounts returns the mount points of every cgroup hierarchy (v1
// and v2) whose root is the host's.
func cgroupMounts(mounts []mount) []string {
	var out []string
	for _, m := range mounts {
		if (m.FSType == "cgroup" || m.FSType == "cgroup2") && m.Root == "/" {
			out = append(out, m.Point)
		}
	}
	return out
}

// cgroup2Mount returns the cgroup v2 mount point ("" if none): on hybrid
// hosts, /sys/fs/cgroup/unified, where eBPF programs attach.
func cgroup2Mount(mounts []mount) string {
	for _, m := range mounts {
		if m.FSType == "cgroup2" && m.Root == "/" {
			return m.Point
		}
	}
	return ""
}

// cgroupProcs lists the processes of every cgroup in the tree at root.
func cgroupProcs(root string) []int {
	var out []int
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		raw, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// killCgroupTree kills every process in the tree at root until none
// remains or timeout passes. cgroup v2's cgroup.kill does it at once
// where the kernel has it; the processes are also killed one by one, for
// v1 hierarchies and older kernels.
func killCgroupTree(root string, timeout time.Duration) error {
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		os.WriteFile(filepath.Join(root, "cgroup.kill"), []byte("1"), 0o644)
		procs := cgroupProcs(root)
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devcluster: processes %v still in %s", procs, root)
		}
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeCgroupTree removes the cgroup at root and its descendants,
// deepest first, once their processes are gone. A cgroup whose last
// process is still exiting is busy for a moment: removal is retried
// until timeout.
func removeCgroupTree(root string, timeout time.Duration) error {
	var dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Strings(dirs)
	deadline := time.Now().Add(timeout)
	for i := len(dirs) - 1; i >= 0; i-- {
		for {
			err := syscall.Rmdir(dirs[i])
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("devcluster: removing cgroup %s: %w", dirs[i], err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
