package dev

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"cairn/internal/devcluster"
)

// leftovers lists what a stopped cluster of the state directory dir
// left on the host: network namespaces, links, cgroups, mounts (the
// pods' namespaces, volumes, the bpf filesystem with the eBPF pins),
// processes and iptables rules.
func leftovers(dir string) []string {
	var out []string
	if ns, _ := filepath.Glob(filepath.Join(devcluster.NetNSDir, devcluster.NamePrefix+"*")); len(ns) > 0 {
		out = append(out, fmt.Sprintf("network namespaces left: %v", ns))
	}
	if ns, _ := filepath.Glob(filepath.Join(devcluster.PodNetNSRoot, devcluster.NamePrefix+"*")); len(ns) > 0 {
		out = append(out, fmt.Sprintf("pod namespace directories left: %v", ns))
	}
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if i.Name == devcluster.BridgeName || strings.HasPrefix(i.Name, devcluster.NamePrefix) {
			out = append(out, "link left: "+i.Name)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return append(out, err.Error())
	}
	sc := bufio.NewScanner(strings.NewReader(string(mounts)))
	for sc.Scan() {
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		point, fstype := f[4], strings.Fields(post)[0]
		switch {
		case strings.HasPrefix(point, dir+"/"):
			out = append(out, fmt.Sprintf("%s mount left at %s", fstype, point))
		case strings.HasPrefix(point, filepath.Join(devcluster.PodNetNSRoot, devcluster.NamePrefix)),
			strings.HasPrefix(point, filepath.Join(devcluster.NetNSDir, devcluster.NamePrefix)):
			out = append(out, fmt.Sprintf("%s mount left at %s", fstype, point))
		case fstype == "cgroup" || fstype == "cgroup2":
			if _, err := os.Stat(filepath.Join(point, devcluster.CgroupRoot)); err == nil {
				out = append(out, "cgroup left: "+filepath.Join(point, devcluster.CgroupRoot))
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(raw), dir) {
			out = append(out, fmt.Sprintf("process left: %d %s", pid, strings.ReplaceAll(string(raw), "\x00", " ")))
		}
	}
	for _, table := range []string{"filter", "nat"} {
		rules, err := exec.Command("iptables", "-w", "5", "-t", table, "-S").Output()
		if err != nil {
			continue
		}
		for _, r := range strings.Split(string(rules), "\n") {
			if strings.Contains(r, "--comment cairn-dev") {
				out = append(out, "iptables rule left: "+r)
			}
		}
	}
	return out
}
