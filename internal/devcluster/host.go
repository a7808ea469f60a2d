package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"cairn/ebpf"
)

// prepareHost sweeps what a crashed run left, then creates the nodes'
// network, cgroups and bpf filesystem, decides whether the eBPF proxy
// can run, and imports the demo image into the agents' image stores.
func (s *supervisor) prepareHost(ctx context.Context) error {
	log := s.cfg.Logger
	sweep(s.l, true, log)
	s.out("Creating bridge %s and network namespaces %s...\n", BridgeName, strings.Join(nodeNames(s.topo.Nodes), ", "))
	if err := setupHostNetwork(s.topo); err != nil {
		return err
	}
	if haveIPTables() {
		if err := addHostRules(); err != nil {
			return err
		}
	} else {
		s.out("No iptables command: pods and agents cannot reach beyond this machine.\n")
	}
	was, err := enableIPForward()
	if err != nil {
		return err
	}
	s.state.IPForwardWas = was
	if err := s.saveState(); err != nil {
		return err
	}
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	s.cgroup2 = cgroup2Mount(mounts)
	if s.cgroup2 != "" {
		for _, n := range s.topo.Nodes {
			if err := os.MkdirAll(filepath.Join(s.cgroup2, n.Cgroup()), 0o755); err != nil {
				return fmt.Errorf("devcluster: %w", err)
			}
		}
	}
	if err := mountBPFFS(s.l.BPF()); err != nil {
		return err
	}
	s.proxyMode = "ebpf"
	if reason := s.ebpfUnavailable(); reason != "" {
		s.proxyMode = "none"
		s.out("The eBPF Service proxy cannot run here (%s): the agents run without it, and ClusterIPs do not answer.\n", reason)
	}
	s.out("Building the demo image %s from %s...\n", DemoImage, s.cfg.Binary)
	tarPath, id, err := demoImageArchive(s.cfg.Binary, s.l.Images())
	if err != nil {
		return err
	}
	for _, n := range s.topo.Nodes {
		if err := importDemoImage(ctx, tarPath, id, s.l.Data(n.Short)); err != nil {
			return err
		}
	}
	return nil
}

// ebpfUnavailable says why the agents' eBPF proxy cannot run, or "".
func (s *supervisor) ebpfUnavailable() string {
	if s.cgroup2 == "" {
		return "no cgroup v2 hierarchy is mounted"
	}
	n := s.topo.Nodes[0]
	err := ebpf.CheckSupport(ebpf.ProxyConfig{
		NodeName: n.Name, CgroupPath: filepath.Join(s.cgroup2, n.Cgroup()), PinPath: filepath.Join(s.l.BPF(), n.Short),
	})
	if err != nil {
		return err.Error()
	}
	return ""
}

// nodeOptions splits the machine's CPUs and memory between the nodes.
func (s *supervisor) nodeOptions() NodeOptions {
	cpu := runtime.NumCPU() / NodeCount
	if cpu < 1 {
		cpu = 1
	}
	o := NodeOptions{CPU: strconv.Itoa(cpu), Cgroup2: s.cgroup2}
	if kb := memTotalKB(); kb > 0 {
		o.Memory = strconv.FormatInt(kb/1024/NodeCount, 10) + "Mi"
	}
	return o
}

// memTotalKB is the machine's memory in KiB from /proc/meminfo, 0 if
// unknown.
func memTotalKB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
