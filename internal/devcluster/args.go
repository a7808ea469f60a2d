package devcluster

import (
	"path/filepath"
	"strconv"
	"strings"
)

// ServerArgs are the arguments of `cairn server` for s. The scheduler and
// the controllers run on whichever replica leads.
func ServerArgs(l Layout, t Topology, s Server, logLevel string) []string {
	return []string{
		"server", "--log-level", logLevel,
		"--name", s.Name, "--data-dir", l.Data(s.Name), "--pki-dir", l.PKI(),
		"--peer-listen", s.PeerAddr, "--store-listen", s.StoreAddr, "--metrics-listen", s.MetricsAddr,
		"--api-listen", s.APIAddr, "--initial-cluster", t.InitialCluster(),
		"--cluster-cidr", ClusterCIDR,
	}
}

// NodeOptions are the per-machine settings of the agents.
type NodeOptions struct {
	// CPU and Memory are each node's share of the machine (e.g. "1",
	// "4Gi").
	CPU, Memory string
	// Cgroup2 is the cgroup v2 mount point; "" turns the eBPF proxy off.
	Cgroup2 string
	// Proxy is "ebpf" or "none".
	Proxy string
}

// devEvictionDiskFree is the free fraction of the disk under which a dev
// cluster's nodes report DiskPressure.
const devEvictionDiskFree = "0.01"

// AgentArgs are the arguments of `cairn agent` for n. The agent runs in
// n's network namespace, with its pod network there too; its eBPF proxy
// attaches to n's cgroup and pins under the state directory's private
// bpf filesystem.
func AgentArgs(l Layout, t Topology, n Node, o NodeOptions, logLevel string) []string {
	args := []string{
		"agent", "--log-level", logLevel,
		"--server", strings.Join(t.APIURLs(), ","), "--pki-dir", l.PKI(),
		"--node-name", n.Name, "--node-ip", n.IP, "--netns", n.NetNS(),
		"--data-dir", l.Data(n.Short), "--cgroup-root", n.Cgroup(),
		"--kubelet-port", strconv.Itoa(n.KubeletPort), "--cluster-cidr", ClusterCIDR,
		"--gossip-listen", n.GossipAddr(), "--gossip-join", strings.Join(peersOf(t, n), ","),
		"--proxy", o.Proxy,
		// As kind does, a dev cluster runs its pods on a nearly full
		// disk instead of tainting its nodes at 10% free.
		"--eviction-disk-free", devEvictionDiskFree,
	}
	if o.Proxy != "none" {
		args = append(args, "--bpf-cgroup", filepath.Join(o.Cgroup2, n.Cgroup()), "--bpf-pin-path", filepath.Join(l.BPF(), n.Short))
	}
	if o.CPU != "" {
		args = append(args, "--cpu", o.CPU)
	}
	if o.Memory != "" {
		args = append(args, "--memory", o.Memory)
	}
	return args
}

// peersOf lists the gossip addresses of the other nodes.
func peersOf(t Topology, self Node) []string {
	var out []string
	for _, n := range t.Nodes {
		if n.Name != self.Name {
			out = append(out, n.GossipAddr())
		}
	}
	return out
}
