package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"cairn/node/agent"
	"cairn/node/apiclient"
	"cairn/node/kubelet"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a node: the kubelet, its container runtime and the pod network",
		Long: `Turn this machine into a node of the cluster: register a Node, renew its
Lease, run the pods bound to it and serve their logs on the kubelet port.

  cairn agent --server https://s1:6443,https://s2:6443,https://s3:6443 \
    --pki-dir /etc/cairn/pki --node-name n1 --node-ip 10.0.0.11

Credentials come from a join token (--token: a server's DATA/token or
` + "`cairn token create`" + `): the agent checks the server's CA against the token,
has its client certificate (system:node:NAME) and its kubelet serving
certificate signed through the API, and keeps them with a kubeconfig in
--data-dir (kubelet.kubeconfig, pki/), reused on restart without --token.
They can also come from --kubeconfig, or from --pki-dir (the cluster CA of
` + "`cairn pki init`" + `), from which the agent mints its certificates itself. Pods keep running
when the agent stops; it adopts them when it starts again.

Agents gossip about each other's health (--gossip-listen): when peers
agree an agent died, its node is NotReady within seconds rather than when
its Lease expires. Give every agent the same --gossip-key-file.`,
		Args: cobra.NoArgs,
		RunE: runAgent,
	}
	f := cmd.Flags()
	f.StringSlice("server", nil, "API server URLs (https://host:port), comma-separated; the agent balances its requests over those that answer and fails over when one dies")
	f.String("kubeconfig", "", "kubeconfig with the agent's credentials (its server is replaced by --server when given)")
	f.String("token", "", "join token (K10...) to get the node's certificates with; needed only on the first start")
	f.String("pki-dir", "", "PKI dir holding the cluster CA (ca.crt, ca.key); the agent mints its own certificates from it")
	f.String("node-name", "", "name of the Node to register (default: the host name)")
	f.String("data-dir", "/var/lib/cairn/agent", "directory of the pods' volumes and logs, the images and the runtime's state")
	f.String("runtime", agent.RuntimeEmbedded, "container runtime: embedded (in process) or cri (containerd, through its CRI socket)")
	f.String("cri-socket", "unix:///run/containerd/containerd.sock", "CRI socket of --runtime cri")
	f.String("cni-conf-dir", agent.DefaultCNIConfDir, "containerd's CNI conf_dir, where --runtime cri writes the pod network's configuration")
	f.String("node-ip", "", "the node's InternalIP, where the API servers and the other nodes reach it (default: the host's first IPv4)")
	f.String("netns", "", "path of the network namespace the pod network lives in (default: the agent's own)")
	f.String("gossip-listen", agent.DefaultGossipListen, "address (host:port, TCP and UDP) where agents gossip about each other's health, to report dead nodes within seconds; empty turns gossip off")
	f.String("gossip-advertise", "", "address (IP:port) peers reach this agent's gossip at (default: --node-ip at the --gossip-listen port)")
	f.StringSlice("gossip-join", nil, "peers to join the gossip through, host:port, comma-separated (optional: agents also find each other through their Nodes)")
	f.String("gossip-key-file", "", "file holding the gossip key, 16, 24 or 32 raw bytes, the same on every agent; without it anyone on the network can have nodes reported dead")
	f.String("cgroup-root", "/cairn", "cgroup under which the pods' cgroups are made")
	f.String("proxy", agent.ProxyEBPF, "Service proxy: ebpf (socket load balancing) or none")
	f.String("bpf-cgroup", "", "cgroup v2 directory the eBPF proxy attaches to (default the cgroup2 mount root); agents sharing a machine each give their own pods' cgroup")
	f.String("bpf-pin-path", "", "bpffs directory for the proxy's pinned programs and maps (default /sys/fs/bpf/cairn/NODE)")
	f.String("kubelet-address", "0.0.0.0", "address the kubelet API listens on")
	f.Int("kubelet-port", kubelet.DefaultKubeletPort, "port of the kubelet API (HTTPS), reported in the Node's daemonEndpoints")
	f.String("tls-cert-file", "", "serving certificate of the kubelet API, without --pki-dir")
	f.String("tls-private-key-file", "", "key of --tls-cert-file")
	f.String("client-ca-file", "", "CA that signs the kubelet API's clients, without --pki-dir (default: the kubeconfig's CA)")
	f.String("cluster-cidr", "", "range of all pods' addresses; traffic to it is not masqueraded")
	f.StringSlice("cluster-dns", nil, "DNS servers of ClusterFirst pods (default: the node's own, see --node-dns)")
	f.Bool("node-dns", true, "serve the cluster's DNS names (Services, pods) to this node's pods, as their nameserver, on the pod network's gateway at port 53; other names go to the host's resolvers. Not used with --cluster-dns")
	f.String("cluster-domain", "cluster.local", "DNS domain of the cluster, for pods' search paths")
	f.StringSlice("node-labels", nil, "labels to add to the Node, key=value, comma-separated")
	f.StringSlice("register-with-taints", nil, "taints the Node is registered with, key[=value]:Effect, comma-separated")
	f.String("cpu", "", "CPU capacity to report instead of the host's (e.g. 2, 500m), for several agents on one machine")
	f.String("memory", "", "memory capacity to report instead of the host's (e.g. 4Gi)")
	f.Int("max-pods", kubelet.DefaultMaxPods, "pods the node can run")
	f.Duration("node-lease-renew-interval", kubelet.DefaultNodeLeaseRenewInterval, "how often the node's Lease is renewed")
	f.Duration("node-lease-duration", kubelet.DefaultNodeLeaseDuration, "lease duration written in the node's Lease")
	f.Duration("node-status-update-frequency", kubelet.DefaultNodeStatusUpdateFrequency, "how often the node's status is checked, and written when it changed")
	f.Duration("node-status-report-frequency", kubelet.DefaultNodeStatusReportFrequency, "how often the node's status is written even when unchanged")
	f.Duration("sync-frequency", kubelet.DefaultSyncFrequency, "how often configMap, secret, downwardAPI and projected volumes are refreshed")
	f.Duration("housekeeping-interval", kubelet.DefaultHousekeepingInterval, "how often what deleted pods left is cleaned up")
	f.StringSlice("allowed-unsafe-sysctls", nil, "sysctls pods may set besides the safe ones, names or prefixes ending in * (e.g. kernel.msg*,net.core.somaxconn), comma-separated; only namespaced ones")
	f.Duration("crash-loop-backoff", kubelet.DefaultCrashLoopBackOffBase, "first wait before restarting a crashing container (doubles up to --crash-loop-backoff-max)")
	f.Duration("crash-loop-backoff-max", kubelet.DefaultCrashLoopBackOffMax, "longest wait before restarting a crashing container")
	f.String("container-log-max-size", "10Mi", "size past which a container's log file is rotated")
	f.Int("container-log-max-files", kubelet.DefaultContainerLogMaxFiles, "log files kept per container, the current one included")
	f.Int64("eviction-memory-available", kubelet.DefaultEvictionMemoryAvailable, "free memory in bytes under which the node reports MemoryPressure")
	f.Float64("eviction-disk-free", kubelet.DefaultEvictionDiskFreeFraction, "free fraction of the data dir's filesystem under which the node reports DiskPressure")
	return cmd
}

func runAgent(cmd *cobra.Command, _ []string) error {
	log, err := newLogger(cmd)
	if err != nil {
		return err
	}
	cfg, err := agentConfig(cmd.Flags())
	if err != nil {
		return err
	}
	cfg.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return agent.Run(ctx, cfg)
}

// agentConfig reads the flags into an agent configuration.
func agentConfig(f *pflag.FlagSet) (agent.Config, error) {
	str := func(n string) string { v, _ := f.GetString(n); return v }
	strs := func(n string) []string { v, _ := f.GetStringSlice(n); return v }
	cfg := agent.Config{
		Servers: strs("server"), Kubeconfig: str("kubeconfig"), Token: str("token"), PKIDir: str("pki-dir"),
		NodeName: str("node-name"), DataDir: str("data-dir"), Runtime: str("runtime"), CRISocket: str("cri-socket"), CNIConfDir: str("cni-conf-dir"),
		NetNS: str("netns"), GossipListen: str("gossip-listen"), GossipAdvertise: str("gossip-advertise"), GossipJoin: strs("gossip-join"),
		GossipKeyFile: str("gossip-key-file"), CgroupRoot: str("cgroup-root"),
		Proxy: str("proxy"), BPFCgroup: str("bpf-cgroup"), BPFPinPath: str("bpf-pin-path"),
		KubeletAddress: str("kubelet-address"), TLSCertFile: str("tls-cert-file"), TLSKeyFile: str("tls-private-key-file"),
		ClientCAFile: str("client-ca-file"), ClusterCIDR: str("cluster-cidr"),
	}
	cfg.KubeletPort, _ = f.GetInt("kubelet-port")
	if len(cfg.Servers) > 0 {
		servers, err := apiclient.ParseServers(strings.Join(cfg.Servers, ","))
		if err != nil {
			return cfg, err
		}
		cfg.Servers = servers
	}
	if ip := str("node-ip"); ip != "" {
		if cfg.NodeIP = net.ParseIP(ip); cfg.NodeIP == nil {
			return cfg, fmt.Errorf("--node-ip %q is not an IP address", ip)
		}
	}
	k := &cfg.Kubelet
	var err error
	if k.NodeLabels, err = agent.ParseLabels(strs("node-labels")); err != nil {
		return cfg, err
	}
	if k.Taints, err = agent.ParseTaints(strs("register-with-taints")); err != nil {
		return cfg, err
	}
	if k.CPU, err = agent.ParseQuantity("cpu", str("cpu")); err != nil {
		return cfg, err
	}
	if k.Memory, err = agent.ParseQuantity("memory", str("memory")); err != nil {
		return cfg, err
	}
	k.MaxPods, _ = f.GetInt("max-pods")
	logMax, err := agent.ParseQuantity("container-log-max-size", str("container-log-max-size"))
	if err != nil {
		return cfg, err
	}
	if logMax != nil {
		k.ContainerLogMaxSize = logMax.Value()
	}
	k.ContainerLogMaxFiles, _ = f.GetInt("container-log-max-files")
	k.ClusterDNS, k.ClusterDomain = strs("cluster-dns"), str("cluster-domain")
	cfg.NodeDNS, _ = f.GetBool("node-dns")
	k.NodeLeaseRenewInterval, _ = f.GetDuration("node-lease-renew-interval")
	k.NodeLeaseDuration, _ = f.GetDuration("node-lease-duration")
	k.NodeStatusUpdateFrequency, _ = f.GetDuration("node-status-update-frequency")
	k.NodeStatusReportFrequency, _ = f.GetDuration("node-status-report-frequency")
	k.SyncFrequency, _ = f.GetDuration("sync-frequency")
	k.HousekeepingInterval, _ = f.GetDuration("housekeeping-interval")
	k.CrashLoopBackOff.Base, _ = f.GetDuration("crash-loop-backoff")
	k.CrashLoopBackOff.Max, _ = f.GetDuration("crash-loop-backoff-max")
	k.AllowedUnsafeSysctls = strs("allowed-unsafe-sysctls")
	if err := kubelet.ValidateSysctlPatterns(k.AllowedUnsafeSysctls); err != nil {
		return cfg, err
	}
	k.EvictionMemoryAvailable, _ = f.GetInt64("eviction-memory-available")
	k.EvictionDiskFreeFraction, _ = f.GetFloat64("eviction-disk-free")
	if k.MaxPods <= 0 {
		return cfg, fmt.Errorf("--max-pods %d: must be at least 1", k.MaxPods)
	}
	if f := k.EvictionDiskFreeFraction; !(f > 0 && f < 1) {
		return cfg, fmt.Errorf("--eviction-disk-free %v: want a fraction of the filesystem between 0 and 1 (0.1 is 10%%)", f)
	}
	if k.NodeLeaseRenewInterval >= k.NodeLeaseDuration {
		return cfg, fmt.Errorf("--node-lease-renew-interval %s must be shorter than --node-lease-duration %s", k.NodeLeaseRenewInterval, k.NodeLeaseDuration)
	}
	return cfg, nil
}
