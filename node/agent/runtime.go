package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"

	"cairn/internal/nsthread"
	"cairn/node/images"
	"cairn/node/kubelet"
	"cairn/node/network"
	"cairn/node/runtime"
	"cairn/node/runtime/cri"
	"cairn/node/runtime/embedded"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nodeRuntime is the node's container runtime and pod network.
type nodeRuntime struct {
	runtime runtime.Runtime
	routes  kubelet.Routes
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	close   func()
}

// newNodeRuntime opens the node's container runtime: containerd through
// CRI, or the embedded runtime with its image store and pod network.
// Either way the routes to the peers' pod networks live in the node's
// network namespace, where probes also connect from.
func newNodeRuntime(ctx context.Context, cfg *Config, log *slog.Logger) (*nodeRuntime, error) {
	if cfg.Runtime == RuntimeCRI {
		return newCRIRuntime(ctx, cfg, log)
	}
	store, err := images.Open(images.Config{Dir: images.Dir(cfg.DataDir), Logger: log.With("component", "images")})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	podNet, err := network.New(network.Config{
		NetNS: cfg.NetNS, StateDir: filepath.Join(cfg.DataDir, "network"), ClusterCIDR: cfg.ClusterCIDR,
		Logger: log.With("component", "network"),
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	routes, err := network.NewRoutes(cfg.NetNS, log.With("component", "routes"))
	if err != nil {
		podNet.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	rt, err := embedded.New(embedded.Config{
		StateDir: filepath.Join(cfg.DataDir, "runtime"), NodeName: cfg.NodeName, CgroupRoot: cfg.CgroupRoot,
		Images: store, Network: podNet, Logger: log.With("component", "runtime"), ShimBinary: cfg.ShimBinary,
	})
	if err != nil {
		routes.Close()
		podNet.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &nodeRuntime{
		runtime: rt,
		routes:  peerRoutes{routes},
		dial:    dialIn(cfg.NetNS),
		close: func() {
			routes.Close()
			podNet.Close()
		},
	}, nil
}

// newCRIRuntime connects to containerd, which attaches pods with the CNI
// configuration the runtime writes for the node's podCIDR; the agent
// keeps the node's egress rules for that range itself.
func newCRIRuntime(ctx context.Context, cfg *Config, log *slog.Logger) (*nodeRuntime, error) {
	egress, err := network.NewEgress(cfg.NetNS, cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	rt, err := cri.New(ctx, cri.Config{
		Socket: cfg.CRISocket, CNIConfDir: cfg.CNIConfDir, NetNS: cfg.NetNS,
		CNI:    cri.CNIConfig{IPAMDataDir: filepath.Join(cfg.DataDir, "cni", "networks")},
		Logger: log.With("component", "runtime"),
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	routes, err := network.NewRoutes(cfg.NetNS, log.With("component", "routes"))
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &nodeRuntime{
		runtime: criRuntime{rt, egress},
		routes:  peerRoutes{routes},
		dial:    dialIn(cfg.NetNS),
		close: func() {
			routes.Close()
			rt.Close()
		},
	}, nil
}

// criRuntime is containerd's runtime with the node's egress rules, set
// for an IPv4 podCIDR before containerd's CNI configuration is.
type criRuntime struct {
	*cri.Runtime
	egress *network.Egress
}

// UpdateRuntimeConfig implements runtime.Runtime.
func (r criRuntime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	prefix, err := netip.ParsePrefix(cidr)
	v4 := err == nil && prefix.Addr().Is4()
	if v4 {
		if err := r.egress.SetPodCIDR(cidr); err != nil {
			return nil, err
		}
	}
	resp, err := r.Runtime.UpdateRuntimeConfig(ctx, req)
	if err != nil || !v4 {
		return resp, err
	}
	// Pods attached while the bridge plugin masqueraded (an older
	// agent's configuration) hold rules of their own that it would leak.
	if err := r.egress.DropCNIMasquerade(cri.DefaultCNINetwork); err != nil {
		return nil, err
	}
	return resp, nil
}

// dialIn connects from inside the network namespace at netns (the
// agent's own when empty), where the pods are reachable.
func dialIn(netns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, proto, addr string) (net.Conn, error) {
		var conn net.Conn
		err := nsthread.Run(netns, func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, proto, addr)
			return err
		})
		return conn, err
	}
}

// peerRoutes feeds the kubelet's peers to the pod network's routes.
type peerRoutes struct{ r *network.Routes }

// Sync implements kubelet.Routes.
func (p peerRoutes) Sync(peers []kubelet.Peer) error {
	var out []network.Peer
	for _, peer := range peers {
		ip, err := netip.ParseAddr(peer.NodeIP)
		if err != nil {
			continue
		}
		for _, c := range peer.PodCIDRs {
			prefix, err := netip.ParsePrefix(c)
			if err != nil || !prefix.Addr().Is4() {
				continue // the pod network routes IPv4 only
			}
			out = append(out, network.Peer{Name: peer.Node, PodCIDR: prefix, InternalIP: ip})
		}
	}
	return p.r.Sync(out)
}
