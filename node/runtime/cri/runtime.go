package cri

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version implements runtime.Runtime.
func (r *Runtime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return call(ctx, r, "Version", r.rt.Version, req)
}

// Status implements runtime.Runtime. containerd reports NetworkReady
// false until it has loaded a CNI configuration.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return call(ctx, r, "Status", r.rt.Status, req)
}

// RunPodSandbox implements runtime.Runtime.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return call(ctx, r, "RunPodSandbox", r.rt.RunPodSandbox, req)
}

// StopPodSandbox implements runtime.Runtime.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return call(ctx, r, "StopPodSandbox", r.rt.StopPodSandbox, req)
}

// RemovePodSandbox implements runtime.Runtime.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	return call(ctx, r, "RemovePodSandbox", r.rt.RemovePodSandbox, req)
}

// PodSandboxStatus implements runtime.Runtime.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return call(ctx, r, "PodSandboxStatus", r.rt.PodSandboxStatus, req)
}

// ListPodSandbox implements runtime.Runtime.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return call(ctx, r, "ListPodSandbox", r.rt.ListPodSandbox, req)
}

// CreateContainer implements runtime.Runtime.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return call(ctx, r, "CreateContainer", r.rt.CreateContainer, req)
}

// StartContainer implements runtime.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return call(ctx, r, "StartContainer", r.rt.StartContainer, req)
}

// StopContainer implements runtime.Runtime. containerd waits up to the
// request's grace period before it kills, so the call gets that on top of
// the usual timeout.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	ctx, cancel := r.withExtra(ctx, time.Duration(req.Timeout)*time.Second)
	defer cancel()
	return call(ctx, r, "StopContainer", r.rt.StopContainer, req)
}

// RemoveContainer implements runtime.Runtime.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	return call(ctx, r, "RemoveContainer", r.rt.RemoveContainer, req)
}

// ListContainers implements runtime.Runtime.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return call(ctx, r, "ListContainers", r.rt.ListContainers, req)
}

// ContainerStatus implements runtime.Runtime.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return call(ctx, r, "ContainerStatus", r.rt.ContainerStatus, req)
}

// UpdateContainerResources implements runtime.Runtime.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return call(ctx, r, "UpdateContainerResources", r.rt.UpdateContainerResources, req)
}

// ExecSync implements runtime.Runtime. The command's own timeout (none
// when zero) comes on top of the usual one.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if req.Timeout == 0 {
		// Without a timeout the command may run as long as it likes, as
		// the kubelet lets it: only ctx bounds it.
		resp, err := r.rt.ExecSync(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("cri: ExecSync: %w", err)
		}
		return resp, nil
	}
	ctx, cancel := r.withExtra(ctx, time.Duration(req.Timeout)*time.Second)
	defer cancel()
	return call(ctx, r, "ExecSync", r.rt.ExecSync, req)
}

// ReopenContainerLog implements runtime.Runtime.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return call(ctx, r, "ReopenContainerLog", r.rt.ReopenContainerLog, req)
}

// UpdateRuntimeConfig implements runtime.Runtime. With Config.CNIConfDir
// set it first writes the pod network's CNI configuration for the podCIDR,
// which containerd picks up from that directory; containerd itself keeps
// the podCIDR only for a conf_template, which Cairn does not use.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr(); r.cfg.CNIConfDir != "" && cidr != "" {
		cni := r.cfg.CNI
		cni.PodCIDR = cidr
		if err := cni.Write(r.cfg.CNIConfDir); err != nil {
			return nil, err
		}
		r.log.Info("wrote the pod network's CNI configuration", "dir", r.cfg.CNIConfDir, "podCIDR", cidr)
	}
	return call(ctx, r, "UpdateRuntimeConfig", r.rt.UpdateRuntimeConfig, req)
}

// withExtra gives a call extra time beyond RequestTimeout when ctx has
// no deadline of its own.
func (r *Runtime) withExtra(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, r.cfg.RequestTimeout+extra)
}
