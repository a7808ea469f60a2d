package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"cairn/node/runtime/embedded/cgroups"
	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func (r *Runtime) container(id string) (*containerRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	return c, nil
}

func (r *Runtime) containersOf(sandboxID string) []*containerRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*containerRecord
	for _, c := range r.containers {
		if c.SandboxID == sandboxID {
			out = append(out, c)
		}
	}
	return out
}

// config returns the container's CRI config; callers must not change it.
func (c *containerRecord) config() *runtimeapi.ContainerConfig {
	return c.decoded.get(c.Config)
}

// spec returns the container's spec. It is shared: callers must not
// change it.
func (r *Runtime) spec(c *containerRecord) (*helper.Spec, error) {
	if sp := c.spec.Load(); sp != nil {
		return sp, nil
	}
	sp, err := helper.ReadSpec(r.containerDir(c.ID))
	if err != nil {
		return nil, err
	}
	c.spec.Store(&sp)
	return &sp, nil
}

func (r *Runtime) saveContainer(c *containerRecord) error {
	return helper.WriteJSON(filepath.Join(r.containerDir(c.ID), "container.json"), c)
}

// CreateContainer prepares a container in a sandbox: its root
// filesystem over the unpacked image, its cgroups with their limits,
// and the spec its init will follow. It does not start it.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	sb, err := r.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	ready := sb.Ready
	r.mu.Unlock()
	if !ready {
		return nil, fmt.Errorf("embedded: sandbox %s is not ready", sb.ID)
	}
	cfg := req.GetConfig()
	if cfg == nil || cfg.GetMetadata() == nil || cfg.GetImage().GetImage() == "" {
		return nil, errors.New("embedded: CreateContainer needs a config with metadata and an image")
	}
	if r.cfg.ShimBinary == "" {
		return nil, fmt.Errorf("embedded: %w", ErrNoShim)
	}
	id := newID()
	dir := r.containerDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	var leased string
	c, err := r.createContainer(ctx, id, sb, cfg, &leased)
	if err != nil {
		r.cleanupContainer(id, r.cgroups.Paths(filepath.Join(r.cfg.CgroupRoot, sb.ID, id)), leased)
		return nil, err
	}
	r.mu.Lock()
	r.containers[id] = c
	r.mu.Unlock()
	r.log.Info("container created", "id", id, "sandbox", sb.ID, "name", cfg.GetMetadata().GetName(), "image", c.Image)
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// createContainer does the work of CreateContainer; leased receives the
// image whose root filesystem it leased, for the cleanup of a failure.
func (r *Runtime) createContainer(ctx context.Context, id string, sb *sandboxRecord, cfg *runtimeapi.ContainerConfig, leased *string) (*containerRecord, error) {
	dir := r.containerDir(id)
	img, imageRoot, err := r.cfg.Images.Unpack(ctx, cfg.GetImage().GetImage(), id)
	if err != nil {
		return nil, err
	}
	*leased = img.ID
	if r.overlay {
		for _, d := range []string{"rootfs", "upper", "work"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				return nil, fmt.Errorf("embedded: %w", err)
			}
		}
	} else {
		if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		if err := copyTree(imageRoot, filepath.Join(dir, "copy")); err != nil {
			return nil, fmt.Errorf("embedded: copying the image's root filesystem: %w", err)
		}
	}
	argv, err := commandLine(cfg, img.Config)
	if err != nil {
		return nil, err
	}
	sc := cfg.GetLinux().GetSecurityContext()
	u, err := resolveUser(imageRoot, img.Config.User, sc)
	if err != nil {
		return nil, err
	}
	caps, err := containerCaps(sc)
	if err != nil {
		return nil, err
	}
	pidOf, err := r.pidTarget(sb, sc.GetNamespaceOptions())
	if err != nil {
		return nil, err
	}
	hostPID := sc.GetNamespaceOptions().GetPid() == runtimeapi.NamespaceMode_NODE
	var ipcNS, shm string
	hostIPC := sc.GetNamespaceOptions().GetIpc() == runtimeapi.NamespaceMode_NODE
	if !hostIPC && sc.GetNamespaceOptions().GetIpc() != runtimeapi.NamespaceMode_CONTAINER {
		ipcNS, shm = sb.IPCNS, sb.Shm
	}
	mounts, err := mountsOf(cfg)
	if err != nil {
		return nil, err
	}
	cwd := cfg.GetWorkingDir()
	if cwd == "" {
		cwd = img.Config.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	sp := &helper.Spec{
		ID: id, Args: argv, Env: environment(cfg, img.Config, sb.Hostname), Cwd: cwd,
		UID: u.uid, GID: u.gid, Groups: u.groups,
		Hostname: sb.Hostname, EtcDir: r.sandboxDir(sb.ID), NetNS: sb.NetNS,
		ImageRoot: imageRoot, Overlay: r.overlay,
		ReadonlyRootfs: sc.GetReadonlyRootfs(), Privileged: sc.GetPrivileged(), NoNewPrivs: sc.GetNoNewPrivs(),
		Mounts: mounts, Caps: caps,
		MaskedPaths: sc.GetMaskedPaths(), ReadonlyPaths: sc.GetReadonlyPaths(),
		Cgroups:     r.cgroups.Paths(filepath.Join(r.cfg.CgroupRoot, sb.ID, id)),
		StopSignal:  stopSignal(cfg, img.Config),
		OOMScoreAdj: cfg.GetLinux().GetResources().GetOomScoreAdj(),
		Stdin:       cfg.GetStdin(), StdinOnce: cfg.GetStdin() && cfg.GetStdinOnce(), TTY: cfg.GetTty(),
		PIDNamespaceOf: pidOf, HostPID: hostPID,
		IPCNS: ipcNS, Shm: shm, HostIPC: hostIPC,
	}
	if !sp.Privileged && len(sp.MaskedPaths) == 0 && len(sp.ReadonlyPaths) == 0 {
		sp.MaskedPaths, sp.ReadonlyPaths = defaultMaskedPaths(), defaultReadonlyPaths()
	}
	if logDir := sb.config().GetLogDirectory(); logDir != "" && cfg.GetLogPath() != "" {
		sp.LogPath = filepath.Join(logDir, cfg.GetLogPath())
	}
	if err := sp.Cgroups.Create(); err != nil {
		return nil, err
	}
	if err := sp.Cgroups.Apply(resourcesOf(cfg.GetLinux().GetResources())); err != nil {
		return nil, err
	}
	if err := helper.WriteSpec(dir, sp); err != nil {
		return nil, err
	}
	raw, err := protojson.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	c := &containerRecord{
		ID: id, SandboxID: sb.ID, Config: raw, CreatedAt: r.now().UnixNano(),
		Image: cfg.GetImage().GetImage(), ImageID: img.ID, ImageRef: img.ID, LogPath: sp.LogPath,
	}
	if len(img.RepoDigests) > 0 {
		c.ImageRef = img.RepoDigests[0]
	}
	c.spec.Store(sp)
	// A copy, not a decode of raw: the request stays the caller's.
	c.decoded.set(proto.CloneOf(cfg))
	return c, r.saveContainer(c)
}

// pidTarget returns the process whose PID namespace a container is to
// share: its pod's shared one (the CRI's POD mode, in a sandbox made
// with one: shareProcessNamespace) or another container's (TARGET, an
// ephemeral container with a target). It is nil for a container with a
// PID namespace of its own, or the host's.
func (r *Runtime) pidTarget(sb *sandboxRecord, ns *runtimeapi.NamespaceOption) (*helper.Process, error) {
	switch ns.GetPid() {
	case runtimeapi.NamespaceMode_POD:
		r.mu.Lock()
		shared := sb.PodInit
		r.mu.Unlock()
		if shared == nil {
			// A sandbox without one (the kubelet asks for none unless
			// the pod shares its processes): the container's own, as
			// the zero value of the option says nothing more.
			return nil, nil
		}
		if !helper.Alive(shared.PID, shared.Start) {
			return nil, fmt.Errorf("embedded: the shared PID namespace of sandbox %s is gone (its init %d died): delete the pod to run it in a new sandbox", sb.ID, shared.PID)
		}
		return shared, nil
	case runtimeapi.NamespaceMode_TARGET:
	default:
		return nil, nil
	}
	r.mu.Lock()
	t := r.containers[ns.GetTargetId()]
	r.mu.Unlock()
	if t == nil || t.SandboxID != sb.ID {
		return nil, fmt.Errorf("embedded: target container %q is not a container of sandbox %s", ns.GetTargetId(), sb.ID)
	}
	st, _ := r.currentState(t)
	if !st.Running || st.PID == 0 {
		return nil, fmt.Errorf("embedded: target container %s is not running", t.ID)
	}
	return &helper.Process{PID: st.PID, Start: st.PIDStart}, nil
}

// cleanupContainer deletes what a container left: its cgroups, its lease
// on the image's root filesystem and its directory.
func (r *Runtime) cleanupContainer(id string, cg cgroups.Paths, imageID string) error {
	var errs []error
	if err := cg.KillAll(killWait); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, cg.Remove())
	if imageID != "" {
		errs = append(errs, r.cfg.Images.Release(imageID, id))
	}
	if err := os.RemoveAll(r.containerDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("embedded: %w", err))
	}
	return errors.Join(errs...)
}

// ListContainers lists the containers that match the filter.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	recs := make([]*containerRecord, 0, len(r.containers))
	for _, c := range r.containers {
		recs = append(recs, c)
	}
	r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range recs {
		if f.GetId() != "" && f.GetId() != c.ID {
			continue
		}
		if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.SandboxID {
			continue
		}
		cfg := c.config()
		if !matchLabels(cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		st, started := r.currentState(c)
		state := containerState(st, started)
		if f.GetState() != nil && f.GetState().GetState() != state {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: c.ID, PodSandboxId: c.SandboxID, Metadata: cfg.GetMetadata(), Image: cfg.GetImage(),
			ImageRef: c.ImageRef, ImageId: c.ImageID, State: state, CreatedAt: c.CreatedAt,
			Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations(),
		})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func containerState(st helper.State, started bool) runtimeapi.ContainerState {
	switch {
	case !started:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case st.Running:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	default:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
}

// ContainerStatus reports a container's state, exit and configuration.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, err := r.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	cfg := c.config()
	st, started := r.currentState(c)
	sp, err := r.spec(c)
	if err != nil {
		sp = &helper.Spec{}
	}
	status := &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: cfg.GetMetadata(), State: containerState(st, started),
		CreatedAt: c.CreatedAt, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt,
		ExitCode: st.ExitCode, Reason: st.Reason, Message: st.Message,
		Image: cfg.GetImage(), ImageRef: c.ImageRef, ImageId: c.ImageID,
		Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations(),
		Mounts: cfg.GetMounts(), LogPath: c.LogPath,
		User: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{
			Uid: int64(sp.UID), Gid: int64(sp.GID), SupplementalGroups: int64s(sp.Groups),
		}},
		StopSignal: runtimeapi.Signal(runtimeapi.Signal_value["SIGNAL_"+signalName(sp.StopSignal)]),
	}
	if res := cfg.GetLinux().GetResources(); res != nil {
		status.Resources = &runtimeapi.ContainerResources{Linux: proto.Clone(res).(*runtimeapi.LinuxContainerResources)}
	}
	return &runtimeapi.ContainerStatusResponse{Status: status}, nil
}

func int64s(v []uint32) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// UpdateContainerResources changes a container's memory and CPU limits.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	c, err := r.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	res := req.GetLinux()
	if res == nil {
		return &runtimeapi.UpdateContainerResourcesResponse{}, nil
	}
	sp, err := r.spec(c)
	if err != nil {
		return nil, err
	}
	if err := sp.Cgroups.Apply(resourcesOf(res)); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := proto.Clone(c.config()).(*runtimeapi.ContainerConfig)
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	cfg.Linux.Resources = res
	raw, err := protojson.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	c.Config = raw
	c.decoded.set(proto.CloneOf(cfg))
	return &runtimeapi.UpdateContainerResourcesResponse{}, r.saveContainer(c)
}

// RemoveContainer kills the container if it runs and deletes it.
// Removing an unknown container succeeds.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	c, err := r.container(req.GetContainerId())
	if isNotFound(err) {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if err := r.removeContainer(ctx, c); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *Runtime) removeContainer(ctx context.Context, c *containerRecord) error {
	if err := r.stopContainer(ctx, c, 0); err != nil {
		return err
	}
	sp, err := r.spec(c)
	if err != nil {
		return err
	}
	if err := r.cleanupContainer(c.ID, sp.Cgroups, c.ImageID); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.containers, c.ID)
	r.mu.Unlock()
	c.shim.close()
	r.log.Info("container removed", "id", c.ID)
	return nil
}

// signalName returns "SIGTERM" for 15, the form of CRI signal names.
func signalName(sig int) string {
	return unix.SignalName(syscall.Signal(sig))
}
