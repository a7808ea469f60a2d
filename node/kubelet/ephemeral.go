package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Ephemeral containers are what `kubectl debug` adds to a running pod.
// The kubelet runs each one once, whatever the pod's restart policy,
// and never again once it exited; they have no probes, ports or
// resources, and do not count towards the pod's phase or readiness. One
// with a targetContainerName shares that container's PID namespace, so
// that a debugger sees, signals and traces its processes.

// ephemeralContainer returns the i-th ephemeral container of pod as the
// container it runs as: the two types share their fields.
func ephemeralContainer(pod *corev1.Pod, i int) *corev1.Container {
	return (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
}

// isEphemeral reports whether name is one of pod's ephemeral containers.
func isEphemeral(pod *corev1.Pod, name string) bool {
	return ephemeralTarget(pod, name) != nil
}

// ephemeralTarget returns the targetContainerName of pod's ephemeral
// container name ("" for none), or nil when name is not one.
func ephemeralTarget(pod *corev1.Pod, name string) *string {
	for i := range pod.Spec.EphemeralContainers {
		if e := &pod.Spec.EphemeralContainers[i]; e.Name == name {
			return &e.TargetContainerName
		}
	}
	return nil
}

// planEphemeral starts the ephemeral containers that never had an
// instance. As in Kubernetes they may start before the init containers
// are done, and one that was created but never started is not tried
// again.
func (in planInput) planEphemeral(p *plan) {
	for i := range in.Pod.Spec.EphemeralContainers {
		c := ephemeralContainer(in.Pod, i)
		if in.Views[c.Name].Latest == nil {
			p.Start = append(p.Start, startRequest{Container: c})
		}
	}
}

// targetNamespace makes an ephemeral container with a target share the
// PID namespace of the target's instance, when the pod's containers
// each have their own (with shareProcessNamespace, all share the pod's
// already).
func targetNamespace(sc *runtimeapi.LinuxContainerSecurityContext, targetID string) {
	ns := sc.GetNamespaceOptions()
	if targetID == "" || ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, targetID
}
