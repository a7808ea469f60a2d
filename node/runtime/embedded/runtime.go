package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"cairn/internal/nsthread"
	"cairn/internal/topdir"
	"cairn/node/images"
	"cairn/node/network"
	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/cgroups"
	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeName is the runtime's name in Version answers and node status.
const RuntimeName = "cairn-embedded"

// runtimeVersion is the version of this runtime's behaviour.
const runtimeVersion = "0.1.0"

// Defaults of Config.
const (
	DefaultCgroupRoot = "/cairn"
	defaultNetNSRoot  = "/run/cairn/netns"
)

// Config configures the embedded runtime.
type Config struct {
	// StateDir holds the sandboxes' and containers' state, e.g.
	// AGENT_DATA_DIR/runtime. It must survive agent restarts.
	StateDir string
	// NetNSDir is where sandbox network namespaces are bind mounted;
	// default /run/cairn/netns/NODE_NAME.
	NetNSDir string
	// NodeName names the node, for the default NetNSDir.
	NodeName string
	// CgroupRoot is the cgroup, relative to each hierarchy's root, under
	// which pods' cgroups are made: CgroupRoot/SANDBOX/CONTAINER.
	// Default /cairn.
	CgroupRoot string
	// Images is the node's image store.
	Images *images.Store
	// Network attaches sandboxes to the pod network. Without it only
	// pods on the host network can run.
	Network *network.Network
	// Logger receives the runtime's events; nil discards them.
	Logger *slog.Logger
	// Now is the clock of creation times; time.Now if nil.
	Now func() time.Time
	// HelperBinary is the binary run as exec helper and pod init: by
	// default HelperName next to the running executable, else the
	// running executable itself (which must then call MaybeRunInit first
	// thing).
	HelperBinary string
	// ShimBinary is the container shim: by default ShimName next to the
	// running executable. Without it, containers cannot be created.
	ShimBinary string
}

// Runtime is the embedded container runtime.
type Runtime struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	cgroups cgroups.Layout
	overlay bool

	mu         sync.Mutex
	sandboxes  map[string]*sandboxRecord
	containers map[string]*containerRecord
}

var _ cairnruntime.Runtime = (*Runtime)(nil)

// New opens the runtime over its state directory, adopting the sandboxes
// and containers a previous run left: containers that kept running
// while the agent was down are reported running, and their exits are
// picked up from their shims.
func New(cfg Config) (*Runtime, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("embedded: no state directory given")
	}
	if cfg.Images == nil {
		return nil, errors.New("embedded: no image store given")
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = DefaultCgroupRoot
	}
	if cfg.HelperBinary == "" {
		cfg.HelperBinary = findHelper()
	}
	if cfg.ShimBinary == "" {
		cfg.ShimBinary = FindShim()
	}
	if cfg.NetNSDir == "" {
		node := cfg.NodeName
		if node == "" {
			node = "default"
		}
		cfg.NetNSDir = filepath.Join(defaultNetNSRoot, node)
	}
	r := &Runtime{
		cfg:        cfg,
		log:        cfg.Logger,
		now:        cfg.Now,
		sandboxes:  map[string]*sandboxRecord{},
		containers: map[string]*containerRecord{},
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	for _, d := range []string{r.path("sandboxes"), r.path("containers"), cfg.NetNSDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
	}
	// One directory per sandbox and container, unrelated to each other
	// (see topdir).
	for _, d := range []string{r.path("sandboxes"), r.path("containers")} {
		if err := topdir.Mark(d); err != nil {
			r.log.Warn("cannot mark the directory as a top directory", "dir", d, "err", err)
		}
	}
	layout, err := cgroups.Detect()
	if err != nil {
		return nil, err
	}
	if _, ok := layout.V1["memory"]; !ok && layout.V2 == "" {
		r.log.Warn("no cgroup hierarchy found: container limits will not be enforced")
	}
	r.cgroups = layout
	r.overlay = overlaySupported(r.path("containers"))
	if !r.overlay {
		r.log.Warn("overlayfs is unavailable under the state directory: containers get a copy of their image", "dir", cfg.StateDir)
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Runtime) path(elem ...string) string {
	return filepath.Join(append([]string{r.cfg.StateDir}, elem...)...)
}

func (r *Runtime) sandboxDir(id string) string   { return r.path("sandboxes", id) }
func (r *Runtime) containerDir(id string) string { return r.path("containers", id) }

// dropSandbox removes a sandbox without a record, as an agent that
// crashed while making it leaves one: its namespaces and /dev/shm are
// where RunPodSandbox makes them.
func (r *Runtime) dropSandbox(id string) {
	sb := &sandboxRecord{ID: id, NetNS: filepath.Join(r.cfg.NetNSDir, id), IPCNS: filepath.Join(r.cfg.NetNSDir, id+".ipc"),
		Shm: filepath.Join(r.sandboxDir(id), "shm")}
	if err := errors.Join(r.teardownIPC(sb), r.teardownNetwork(sb)); err != nil {
		r.log.Warn("cleaning up a dropped sandbox", "id", id, "err", err)
	}
	os.RemoveAll(r.sandboxDir(id))
}

// load reads the records of the previous run.
func (r *Runtime) load() error {
	sandboxes, err := os.ReadDir(r.path("sandboxes"))
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	for _, e := range sandboxes {
		rec := &sandboxRecord{}
		if err := helper.ReadJSON(filepath.Join(r.sandboxDir(e.Name()), "sandbox.json"), rec); err != nil {
			r.log.Warn("dropping an unreadable sandbox", "id", e.Name(), "err", err)
			r.dropSandbox(e.Name())
			continue
		}
		// After a reboot the namespace mount is gone: the sandbox cannot
		// come back, the kubelet will make a new one.
		if rec.Ready && (rec.NetNS != "" && !network.IsNetNS(rec.NetNS) || rec.IPCNS != "" && !nsthread.IsNamespace(rec.IPCNS)) {
			rec.Ready = false
			if err := helper.WriteJSON(filepath.Join(r.sandboxDir(rec.ID), "sandbox.json"), rec); err != nil {
				return err
			}
		}
		r.sandboxes[rec.ID] = rec
	}
	containers, err := os.ReadDir(r.path("containers"))
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	for _, e := range containers {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rec := &containerRecord{}
		if err := helper.ReadJSON(filepath.Join(r.containerDir(e.Name()), "container.json"), rec); err != nil {
			r.log.Warn("dropping an unreadable container", "id", e.Name(), "err", err)
			os.RemoveAll(r.containerDir(e.Name()))
			continue
		}
		r.containers[rec.ID] = rec
	}
	if r.cfg.Network != nil {
		if err := r.cfg.Network.GC(func(id string) bool {
			sb, ok := r.sandboxes[id]
			return ok && sb.Ready
		}); err != nil {
			return err
		}
	}
	r.log.Info("embedded runtime started", "sandboxes", len(r.sandboxes), "containers", len(r.containers), "overlay", r.overlay, "helper", r.cfg.HelperBinary, "shim", r.cfg.ShimBinary)
	return nil
}

// newID returns a random 64-hex-digit ID, like containerd's.
func newID() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Version returns the runtime's name and version.
func (r *Runtime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       RuntimeName,
		RuntimeVersion:    runtimeVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports the runtime ready, and the network ready once the node
// has a pod CIDR.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	netReady := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	switch {
	case r.cfg.Network == nil:
		netReady.Status, netReady.Reason, netReady.Message = false, "NoPodNetwork", "the runtime has no pod network; only hostNetwork pods can run"
	case !r.cfg.Network.Ready():
		netReady.Status, netReady.Reason, netReady.Message = false, "NetworkPluginNotReady", "the node has no pod CIDR yet"
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		netReady,
	}}}, nil
}

// UpdateRuntimeConfig passes the node's pod CIDR to the pod network.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidrs := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	if cidrs == "" {
		return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
	}
	if r.cfg.Network == nil {
		return nil, errors.New("embedded: the runtime has no pod network to configure")
	}
	// The kubelet joins dual-stack CIDRs with commas; the pod network is
	// IPv4 only.
	for _, c := range strings.Split(cidrs, ",") {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil && p.Addr().Is4() {
			if err := r.cfg.Network.SetPodCIDR(p.String()); err != nil {
				return nil, err
			}
			return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
		}
	}
	return nil, fmt.Errorf("embedded: no IPv4 pod CIDR in %q", cidrs)
}
