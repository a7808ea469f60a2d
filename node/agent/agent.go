// Package agent wires a Cairn node: API credentials (a kubeconfig, or a
// client certificate minted from the cluster CA) over client-side
// balancing across the API servers, the container runtime, the pod
// network's routes, the kubelet and its HTTPS API, and the gossip that
// reports dead peers. `cairn agent` parses flags into a Config and calls
// Run.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"cairn/node/kubelet"
	"cairn/node/kubelet/server"
	"cairn/node/runtime/embedded"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Runtime names.
const (
	RuntimeEmbedded = "embedded"
	RuntimeCRI      = "cri"
)

// DefaultCNIConfDir is containerd's default CNI conf_dir.
const DefaultCNIConfDir = "/etc/cni/net.d"

// Config is an agent's configuration, one field per flag of
// `cairn agent`.
type Config struct {
	// Servers are the API servers' URLs; requests are balanced over those
	// that answer, and fail over when one dies.
	Servers []string
	// Kubeconfig, Token or PKIDir give the API credentials.
	Kubeconfig string
	Token      string
	PKIDir     string
	NodeName   string
	// DataDir holds pods' volumes, logs, images and the runtime's state.
	DataDir string
	// Runtime is RuntimeEmbedded or RuntimeCRI (containerd at CRISocket,
	// whose CNI conf_dir is CNIConfDir).
	Runtime    string
	CRISocket  string
	CNIConfDir string
	// NodeIP is the node's InternalIP; the first global IPv4 of the host
	// when nil.
	NodeIP net.IP
	// NetNS is the path of the node's network namespace, where the pod
	// network lives and probes connect from; the agent's own when empty
	// (several agents on one machine each get one).
	NetNS string
	// GossipListen is where the agent gossips with its peers about their
	// health, host:port (DefaultGossipListen for `cairn agent`); empty
	// turns gossip off. GossipAdvertise is the address peers reach it at
	// (default: NodeIP at the listen port), GossipJoin lists peers to join
	// at start (optional: the Nodes publish their gossip addresses), and
	// GossipKeyFile holds the key that encrypts and authenticates gossip.
	GossipListen    string
	GossipAdvertise string
	GossipJoin      []string
	GossipKeyFile   string
	// CgroupRoot is the cgroup under which pods' cgroups are made.
	CgroupRoot string
	// ShimBinary is the embedded runtime's container shim; by default
	// cairn-shim beside the agent's executable, where `make build` puts
	// it.
	ShimBinary string
	// Proxy is ProxyEBPF or ProxyNone (also when empty; `cairn agent`
	// defaults to ProxyEBPF). The eBPF proxy attaches
	// to the cgroup v2 directory BPFCgroup (default the cgroup2 mount
	// root) and pins under BPFPinPath (default /sys/fs/bpf/cairn/NODE).
	Proxy      string
	BPFCgroup  string
	BPFPinPath string
	// KubeletAddress and KubeletPort are where the kubelet API listens.
	KubeletAddress string
	KubeletPort    int
	// TLSCertFile, TLSKeyFile and ClientCAFile serve the kubelet API
	// when there is no PKIDir.
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// ClusterCIDR is the range of all pods, kept unmasqueraded.
	ClusterCIDR string
	// NodeDNS serves the cluster's DNS names to the node's pods, on the
	// pod network's gateway at port 53, and makes it the nameserver of
	// ClusterFirst pods; it is off when Kubelet.ClusterDNS names other
	// servers. `cairn agent` turns it on by default.
	NodeDNS bool
	// Kubelet holds the kubelet's own settings (labels, taints,
	// capacity, intervals...); the agent fills in the rest.
	Kubelet kubelet.Config

	Logger *slog.Logger
}

func (c *Config) check() error {
	if c.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("agent: no --node-name and no host name: %w", err)
		}
		c.NodeName = host
	}
	if c.DataDir == "" {
		return errors.New("agent: --data-dir is required")
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = kubelet.DefaultKubeletPort
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch c.Runtime {
	case "", RuntimeEmbedded:
		c.Runtime = RuntimeEmbedded
		// Without its shim the embedded runtime starts no container:
		// better to say so now than to leave every pod failing.
		if c.ShimBinary == "" {
			c.ShimBinary = embedded.FindShim()
		}
		if c.ShimBinary == "" {
			return fmt.Errorf("agent: %w", embedded.ErrNoShim)
		}
		if fi, err := os.Stat(c.ShimBinary); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("agent: the container shim %s is not an executable file (%v): build it with `make build`, or name the right one", c.ShimBinary, err)
		}
	case RuntimeCRI:
		if c.CNIConfDir == "" {
			c.CNIConfDir = DefaultCNIConfDir
		}
	default:
		return fmt.Errorf("agent: unknown --runtime %q: use embedded or cri", c.Runtime)
	}
	return nil
}

// Run runs the node until ctx ends. Pods keep running after it returns;
// the next run adopts them.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	log := cfg.Logger.With("node", cfg.NodeName)
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	conn, err := connect(&cfg, log)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(conn.rest)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	eventRest := rest.CopyConfig(conn.rest)
	eventRest.QPS, eventRest.Burst = eventQPS, eventBurst
	eventClient, err := kubernetes.NewForConfig(eventRest)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	balancerCtx, stopBalancer := context.WithCancel(ctx)
	defer stopBalancer()
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn.balancer.Run(balancerCtx)
	}()
	// The agent's metrics (Go runtime, process, API servers, Service
	// proxy) are served on the kubelet API's /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		balancerCollector{conn.balancer})
	// One watch of the Services and EndpointSlices serves the Service
	// proxy and the DNS server.
	serviceInformers := informers.NewSharedInformerFactory(client, 0)
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer serviceInformers.Shutdown()
	defer stopInformers()
	stopProxy, err := startProxy(ctx, &cfg, client, serviceInformers, reg, log)
	if err != nil {
		return err
	}
	defer stopProxy()
	serviceInformers.Start(informersCtx.Done())
	nodeIP := cfg.NodeIP
	if nodeIP == nil {
		if nodeIP, err = hostIP(); err != nil {
			return err
		}
	}
	serving, err := servingTLS(&cfg, conn, nodeIP)
	if err != nil {
		return err
	}
	node, err := newNodeRuntime(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer node.close()
	stopGossip, err := startGossip(ctx, &cfg, client, nodeIP, node.dial, log)
	if err != nil {
		return err
	}
	defer stopGossip()

	kc := cfg.Kubelet
	kc.NodeName, kc.Client, kc.EventClient, kc.Runtime, kc.NodeIP = cfg.NodeName, client, eventClient, node.runtime, nodeIP
	kc.RootDir = filepath.Join(cfg.DataDir, "kubelet")
	kc.PodLogsDir = filepath.Join(cfg.DataDir, "pod-logs")
	kc.KubeletPort = cfg.KubeletPort
	kc.CgroupRoot = cfg.CgroupRoot
	kc.Routes, kc.Dial = node.routes, node.dial
	if cfg.NodeDNS && len(kc.ClusterDNS) == 0 {
		d, err := newNodeDNS(informersCtx, &cfg, serviceInformers, reg, log.With("component", "dns"))
		if err != nil {
			return err
		}
		defer d.stop()
		kc.PodNetworkReady, kc.NodeDNS = d.podNetworkReady, d.address
	}
	kc.Logger = log.With("component", "kubelet")
	k, err := kubelet.New(kc)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{TLS: serving, Logs: k, Streams: k, Logger: log.With("component", "kubelet-api"),
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.KubeletAddress, strconv.Itoa(cfg.KubeletPort)))
	if err != nil {
		return fmt.Errorf("agent: kubelet API: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil {
			log.Error("kubelet API stopped", "err", err)
		}
	}()
	log.Info("agent started", "kubelet-api", ln.Addr().String(), "node-ip", nodeIP.String(), "runtime", cfg.Runtime)
	runErr := k.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	return runErr
}

// hostIP is the first global unicast IPv4 address of the host's
// interfaces, the node IP when none is given.
func hostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("agent: listing addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP, nil
		}
	}
	return nil, errors.New("agent: no IPv4 address to be the node IP: pass --node-ip")
}

// ParseQuantity reads a --cpu or --memory value; empty means the host's.
func ParseQuantity(flag, s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, fmt.Errorf("agent: --%s %q: %w", flag, s, err)
	}
	return &q, nil
}
