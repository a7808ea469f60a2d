package cgroups

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// V1Controllers returns the cgroup v1 controllers a container is placed
// in: memory and cpu for limits, cpuacct and pids for accounting.
func V1Controllers() []string { return []string{"memory", "cpu", "cpuacct", "pids"} }

// Layout says where the cgroup hierarchies are mounted.
type Layout struct {
	// V1 maps a controller to the mount point of its hierarchy.
	V1 map[string]string
	// V2 is the cgroup2 mount point, "" if there is none. On hybrid
	// hosts it holds no controllers and serves placement only (eBPF
	// programs attach there).
	V2 string
}

// Detect reads the cgroup mounts from /proc/self/mountinfo.
func Detect() (Layout, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Layout{}, fmt.Errorf("cgroups: %w", err)
	}
	defer f.Close()
	l := Layout{V1: map[string]string{}}
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
			if l.V2 == "" {
				l.V2 = fields[4]
			}
		case "cgroup":
			for _, opt := range strings.Split(tail[2], ",") {
				if _, seen := l.V1[opt]; !seen {
					l.V1[opt] = fields[4]
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Layout{}, fmt.Errorf("cgroups: %w", err)
	}
	return l, nil
}

// Paths returns the directories of the cgroup at rel (e.g.
// "/cairn/<sandbox>/<container>") under each hierarchy we use.
func (l Layout) Paths(rel string) Paths {
	p := Paths{V1: map[string]string{}}
	for _, c := range V1Controllers() {
		if mnt, ok := l.V1[c]; ok {
			p.V1[c] = filepath.Join(mnt, rel)
		}
	}
	if l.V2 != "" {
		p.V2 = filepath.Join(l.V2, rel)
	}
	return p
}
