package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cairn/internal/nsthread"
	"cairn/node/network"
	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hostsHeader starts the /etc/hosts of pods not on the host network.
const hostsHeader = `# Kubernetes-managed hosts file (cairn embedded runtime).
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

func (r *Runtime) sandbox(id string) (*sandboxRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return nil, notFound("sandbox", id)
	}
	return sb, nil
}

// config returns the sandbox's CRI config; callers must not change it.
func (sb *sandboxRecord) config() *runtimeapi.PodSandboxConfig {
	return sb.decoded.get(sb.Config)
}

func (r *Runtime) saveSandbox(sb *sandboxRecord) error {
	return helper.WriteJSON(filepath.Join(r.sandboxDir(sb.ID), "sandbox.json"), sb)
}

// RunPodSandbox creates a sandbox: a network namespace attached to the
// pod network (unless the pod uses the host's), and the hosts, hostname
// and resolv.conf files its containers get.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	if cfg == nil || cfg.GetMetadata() == nil {
		return nil, errors.New("embedded: RunPodSandbox needs a config with metadata")
	}
	raw, err := protojson.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	sb := &sandboxRecord{ID: newID(), Config: raw, CreatedAt: r.now().UnixNano(), RuntimeHandler: req.GetRuntimeHandler()}
	// A copy, not a decode of raw: the request stays the caller's.
	sb.decoded.set(proto.CloneOf(cfg))
	dir := r.sandboxDir(sb.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := r.setupSandbox(sb, cfg); err != nil {
		r.stopPodInit(sb)
		r.teardownIPC(sb)
		r.teardownNetwork(sb)
		os.RemoveAll(dir)
		return nil, err
	}
	r.mu.Lock()
	r.sandboxes[sb.ID] = sb
	r.mu.Unlock()
	r.log.Info("sandbox started", "id", sb.ID, "pod", cfg.GetMetadata().GetNamespace()+"/"+cfg.GetMetadata().GetName(), "ip", sb.IP)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.ID}, nil
}

func (r *Runtime) setupSandbox(sb *sandboxRecord, cfg *runtimeapi.PodSandboxConfig) error {
	hostNet := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	sb.Hostname = cfg.GetHostname()
	if sb.Hostname == "" {
		sb.Hostname = cfg.GetMetadata().GetName()
	}
	if hostNet {
		if h, err := os.Hostname(); err == nil && cfg.GetHostname() == "" {
			sb.Hostname = h
		}
	} else {
		if r.cfg.Network == nil {
			return errors.New("embedded: the runtime has no pod network: only hostNetwork pods can run")
		}
		sb.NetNS = filepath.Join(r.cfg.NetNSDir, sb.ID)
		if err := network.NewNetNS(sb.NetNS); err != nil {
			sb.NetNS = ""
			return err
		}
		ip, err := r.cfg.Network.Attach(sb.ID, sb.NetNS)
		if err != nil {
			return err
		}
		sb.IP = ip.String()
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetIpc() != runtimeapi.NamespaceMode_NODE {
		if err := r.setupIPC(sb); err != nil {
			return err
		}
	}
	if err := applySysctls(sb, cfg.GetLinux().GetSysctls()); err != nil {
		return err
	}
	if err := r.writeEtcFiles(sb, cfg, hostNet); err != nil {
		return err
	}
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() == runtimeapi.NamespaceMode_POD {
		root := filepath.Join(r.sandboxDir(sb.ID), "pod-init-root")
		if err := os.Mkdir(root, 0o555); err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
		p, err := helper.StartPodInit(r.cfg.HelperBinary, root, filepath.Join(r.sandboxDir(sb.ID), "pod-init.log"))
		if err != nil {
			return err
		}
		sb.PodInit = &p
		// Recorded at once: a process outlives an agent that would
		// crash before the end of the setup.
		if err := r.saveSandbox(sb); err != nil {
			return err
		}
	}
	sb.Ready = true
	return r.saveSandbox(sb)
}

// applySysctls sets the pod's namespaced sysctls: the network ones in
// its network namespace, the IPC ones in its IPC namespace. Others are
// the host's, which a pod may not set.
func applySysctls(sb *sandboxRecord, sysctls map[string]string) error {
	for k, v := range sysctls {
		kind, ns := nsthread.Net, sb.NetNS
		if !strings.HasPrefix(k, "net.") {
			kind, ns = nsthread.IPC, sb.IPCNS
			if !cairnruntime.IPCSysctl(k) {
				return fmt.Errorf("embedded: sysctl %s is not namespaced: only net.*, kernel.shm*, kernel.msg*, kernel.sem and fs.mqueue.* can be set for a pod", k)
			}
		}
		if ns == "" {
			return fmt.Errorf("embedded: sysctl %s needs the pod's own namespace, not the host's (hostNetwork or hostIPC)", k)
		}
		p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if err := nsthread.RunIn(kind, ns, func() error { return os.WriteFile(p, []byte(v), 0o644) }); err != nil {
			return fmt.Errorf("embedded: sysctl %s=%s: %w", k, v, err)
		}
	}
	return nil
}

// setupIPC makes the IPC namespace and the /dev/shm the sandbox's
// containers share, as the pause container holds them in Kubernetes.
func (r *Runtime) setupIPC(sb *sandboxRecord) error {
	sb.IPCNS = filepath.Join(r.cfg.NetNSDir, sb.ID+".ipc")
	if err := nsthread.New(nsthread.IPC, sb.IPCNS); err != nil {
		sb.IPCNS = ""
		return fmt.Errorf("embedded: %w", err)
	}
	sb.Shm = filepath.Join(r.sandboxDir(sb.ID), "shm")
	if err := os.Mkdir(sb.Shm, 0o1777); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	if err := unix.Mount("shm", sb.Shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("embedded: mounting the pod's /dev/shm: %w", err)
	}
	return nil
}

// teardownIPC removes the sandbox's shared IPC namespace and /dev/shm.
func (r *Runtime) teardownIPC(sb *sandboxRecord) error {
	var errs []error
	if sb.Shm != "" {
		if err := unix.Unmount(sb.Shm, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("embedded: unmounting %s: %w", sb.Shm, err))
		}
	}
	if sb.IPCNS != "" {
		errs = append(errs, nsthread.Remove(sb.IPCNS))
	}
	return errors.Join(errs...)
}

// writeEtcFiles writes the sandbox's hosts, hostname and resolv.conf.
func (r *Runtime) writeEtcFiles(sb *sandboxRecord, cfg *runtimeapi.PodSandboxConfig, hostNet bool) error {
	dir := r.sandboxDir(sb.ID)
	hosts := []byte(hostsHeader + sb.IP + "\t" + sb.Hostname + "\n")
	if hostNet {
		if h, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = h
		}
	}
	dns := cfg.GetDnsConfig()
	var resolv []byte
	if len(dns.GetServers()) == 0 && len(dns.GetSearches()) == 0 && len(dns.GetOptions()) == 0 {
		resolv, _ = os.ReadFile("/etc/resolv.conf")
	} else {
		var b strings.Builder
		for _, s := range dns.GetServers() {
			fmt.Fprintf(&b, "nameserver %s\n", s)
		}
		if len(dns.GetSearches()) > 0 {
			fmt.Fprintf(&b, "search %s\n", strings.Join(dns.GetSearches(), " "))
		}
		if len(dns.GetOptions()) > 0 {
			fmt.Fprintf(&b, "options %s\n", strings.Join(dns.GetOptions(), " "))
		}
		resolv = []byte(b.String())
	}
	for name, data := range map[string][]byte{"hosts": hosts, "hostname": []byte(sb.Hostname + "\n"), "resolv.conf": resolv} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
	}
	return nil
}

// teardownNetwork detaches the sandbox from the pod network and deletes
// its namespace; it is idempotent.
func (r *Runtime) teardownNetwork(sb *sandboxRecord) error {
	var errs []error
	if r.cfg.Network != nil && sb.NetNS != "" {
		errs = append(errs, r.cfg.Network.Detach(sb.ID))
	}
	if sb.NetNS != "" {
		errs = append(errs, network.RemoveNetNS(sb.NetNS))
	}
	return errors.Join(errs...)
}

// stopPodInit ends the sandbox's shared PID namespace, if it has one.
func (r *Runtime) stopPodInit(sb *sandboxRecord) error {
	if sb.PodInit == nil {
		return nil
	}
	if err := helper.StopPodInit(*sb.PodInit, killWait); err != nil {
		return fmt.Errorf("embedded: sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// StopPodSandbox kills the sandbox's containers and gives back its
// network resources. Stopping a stopped or unknown sandbox succeeds.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	sb, err := r.sandbox(req.GetPodSandboxId())
	if isNotFound(err) {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	for _, c := range r.containersOf(sb.ID) {
		if err := r.stopContainer(ctx, c, 0); err != nil {
			return nil, err
		}
	}
	if err := r.stopPodInit(sb); err != nil {
		return nil, err
	}
	if err := r.teardownIPC(sb); err != nil {
		return nil, err
	}
	if err := r.teardownNetwork(sb); err != nil {
		return nil, err
	}
	r.mu.Lock()
	wasReady := sb.Ready
	sb.Ready = false
	err = r.saveSandbox(sb)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if wasReady {
		r.log.Info("sandbox stopped", "id", sb.ID)
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox stops the sandbox, removes its containers and
// deletes it. Removing an unknown sandbox succeeds.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	sb, err := r.sandbox(req.GetPodSandboxId())
	if isNotFound(err) {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.ID}); err != nil {
		return nil, err
	}
	for _, c := range r.containersOf(sb.ID) {
		if err := r.removeContainer(ctx, c); err != nil {
			return nil, err
		}
	}
	if err := r.cgroups.Paths(filepath.Join(r.cfg.CgroupRoot, sb.ID)).Remove(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(r.sandboxDir(sb.ID)); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	r.mu.Lock()
	delete(r.sandboxes, sb.ID)
	r.mu.Unlock()
	r.log.Info("sandbox removed", "id", sb.ID)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports a sandbox's state and address.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	sb, err := r.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := sb.config()
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.ID,
		Metadata:       cfg.GetMetadata(),
		State:          sandboxState(sb),
		CreatedAt:      sb.CreatedAt,
		Labels:         cfg.GetLabels(),
		Annotations:    cfg.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
	if sb.Ready && sb.IP != "" {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: sb.IP}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// sandboxState is READY while the sandbox runs, and for a pod sharing its
// PID namespace, while the namespace's init lives: without it no process
// can join the namespace, and the kubelet must make a new sandbox.
func sandboxState(sb *sandboxRecord) runtimeapi.PodSandboxState {
	if sb.Ready && (sb.PodInit == nil || helper.Alive(sb.PodInit.PID, sb.PodInit.Start)) {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

// ListPodSandbox lists the sandboxes that match the filter.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sandboxes {
		if f.GetId() != "" && f.GetId() != sb.ID {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != sandboxState(sb) {
			continue
		}
		cfg := sb.config()
		if !matchLabels(cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: sb.ID, Metadata: cfg.GetMetadata(), State: sandboxState(sb), CreatedAt: sb.CreatedAt,
			Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations(), RuntimeHandler: sb.RuntimeHandler,
		})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
