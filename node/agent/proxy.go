package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"cairn/ebpf"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Proxy modes.
const (
	ProxyEBPF = "ebpf"
	ProxyNone = "none"
)

// bpffsRoot is where the kernel's bpf filesystem is conventionally mounted.
const bpffsRoot = "/sys/fs/bpf"

// startProxy starts the Service proxy the configuration asks for, on the
// Service and EndpointSlice informers of inf (which the caller starts
// afterwards), and returns how to stop it. Without what eBPF needs it fails with the
// reason, rather than leaving Services silently unreachable.
func startProxy(ctx context.Context, cfg *Config, client kubernetes.Interface, inf informers.SharedInformerFactory, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	switch cfg.Proxy {
	case ProxyNone, "":
		log.Info("Service proxy off (--proxy none): ClusterIPs are not forwarded on this node")
		return func() {}, nil
	case ProxyEBPF:
	default:
		return nil, fmt.Errorf("agent: unknown --proxy %q: use ebpf or none", cfg.Proxy)
	}
	pc := ebpf.ProxyConfig{
		Client: client, Informers: inf, NodeName: cfg.NodeName, CgroupPath: cfg.BPFCgroup, PinPath: cfg.BPFPinPath,
		Logger: log.With("component", "proxy"), Metrics: reg,
	}
	if err := mountBPFFS(pc.PinPath, log); err != nil {
		return nil, err
	}
	if err := ebpf.CheckSupport(pc); err != nil {
		return nil, fmt.Errorf("agent: the eBPF Service proxy cannot run: %w (or start with --proxy none)", err)
	}
	p, err := ebpf.NewProxy(pc)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("Service proxy stopped", "err", err)
		}
	}()
	// Closing leaves the pinned programs and maps in place, so Service
	// traffic keeps flowing while the agent restarts.
	return func() { <-done; p.Close() }, nil
}

// mountBPFFS mounts the bpf filesystem at /sys/fs/bpf when the pin path
// lies under it and nothing is mounted there yet, as systemd does on most
// distributions; pins elsewhere are the operator's to provide.
func mountBPFFS(pinPath string, log *slog.Logger) error {
	if pinPath != "" && !strings.HasPrefix(filepath.Clean(pinPath)+"/", bpffsRoot+"/") {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(bpffsRoot, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if err := os.MkdirAll(bpffsRoot, 0o755); err != nil {
		return fmt.Errorf("agent: %s: %w", bpffsRoot, err)
	}
	if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("agent: mounting the bpf filesystem at %s: %w (mount it, e.g. `mount -t bpf bpf %s`, or start with --proxy none)", bpffsRoot, err, bpffsRoot)
	}
	log.Info("mounted the bpf filesystem", "path", bpffsRoot)
	return nil
}
