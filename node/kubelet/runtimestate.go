package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podRuntime is what the runtime holds of one pod.
type podRuntime struct {
	// Sandboxes are the pod's sandboxes, newest first; Sandbox is the
	// newest one's status, nil when there is none.
	Sandboxes []*runtimeapi.PodSandbox
	Sandbox   *runtimeapi.PodSandboxStatus
	// Instances are the pod's containers by name, newest first.
	Instances map[string][]*instance
	Views     map[string]containerView
}

// sandboxReady reports whether the newest sandbox runs.
func (r *podRuntime) sandboxReady() bool {
	return r.Sandbox != nil && r.Sandbox.State == runtimeapi.PodSandboxState_SANDBOX_READY
}

// podIPs are the newest sandbox's addresses.
func (r *podRuntime) podIPs() []string {
	if r.Sandbox == nil || r.Sandbox.Network == nil || r.Sandbox.Network.Ip == "" {
		return nil
	}
	ips := []string{r.Sandbox.Network.Ip}
	for _, ip := range r.Sandbox.Network.AdditionalIps {
		ips = append(ips, ip.Ip)
	}
	return ips
}

// running lists the instances that run.
func (r *podRuntime) running() []*instance {
	var out []*instance
	for _, list := range r.Instances {
		for _, i := range list {
			if i.State == stateRunning {
				out = append(out, i)
			}
		}
	}
	return out
}

// containerName finds the container an instance runs.
func (r *podRuntime) containerName(id string) string {
	for name, list := range r.Instances {
		for _, i := range list {
			if i.ID == id {
				return name
			}
		}
	}
	return ""
}

// podRuntime asks the runtime for the pod's sandboxes and containers.
func (k *Kubelet) podRuntime(ctx context.Context, uid types.UID) (*podRuntime, error) {
	sbs, err := k.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: podUIDLabel(uid)}})
	if err != nil {
		return nil, fmt.Errorf("kubelet: listing the sandboxes of pod %s: %w", uid, err)
	}
	r := &podRuntime{Sandboxes: sbs.Items, Instances: map[string][]*instance{}}
	sort.SliceStable(r.Sandboxes, func(i, j int) bool {
		a, b := r.Sandboxes[i], r.Sandboxes[j]
		if a.Metadata.GetAttempt() != b.Metadata.GetAttempt() {
			return a.Metadata.GetAttempt() > b.Metadata.GetAttempt()
		}
		return a.CreatedAt > b.CreatedAt
	})
	if len(r.Sandboxes) > 0 {
		st, err := k.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.Sandboxes[0].Id})
		if err != nil {
			return nil, fmt.Errorf("kubelet: sandbox status of pod %s: %w", uid, err)
		}
		r.Sandbox = st.Status
	}
	cs, err := k.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: podUIDLabel(uid)}})
	if err != nil {
		return nil, fmt.Errorf("kubelet: listing the containers of pod %s: %w", uid, err)
	}
	for _, c := range cs.Containers {
		st, err := k.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil || st.Status == nil {
			continue // removed meanwhile
		}
		inst := instanceOf(st.Status)
		if inst.LogPath != "" && !filepath.IsAbs(inst.LogPath) {
			inst.LogPath = filepath.Join(k.podLogDir(c.Labels[labelPodNamespace], c.Labels[labelPodName], uid), inst.LogPath)
		}
		name := c.Labels[labelContainerName]
		r.Instances[name] = append(r.Instances[name], inst)
	}
	for _, list := range r.Instances {
		sortNewestFirst(list)
	}
	r.Views = viewsOf(r.Instances)
	return r, nil
}

// podLogDir is the directory of a pod's container logs, named as the
// kubelet names it (NAMESPACE_NAME_UID).
func (k *Kubelet) podLogDir(namespace, name string, uid types.UID) string {
	return filepath.Join(k.cfg.PodLogsDir, fmt.Sprintf("%s_%s_%s", namespace, name, uid))
}
