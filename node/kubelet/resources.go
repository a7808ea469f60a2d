package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cpuPeriod is the CFS period quotas are computed for, in µs.
const cpuPeriod = 100000

// OOM score adjustments by QoS class, as the kubelet's.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// qosClass is the pod's QoS class: the API server's when it set one,
// else computed by Kubernetes' rules: BestEffort without any CPU or
// memory request or limit, Guaranteed when every container limits both
// and requests what it limits, Burstable otherwise.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	anySet, guaranteed := false, true
	all := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				anySet = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// containerResources turns a container's requests and limits into the
// runtime's cgroup settings: CPU shares from the request (at least 2),
// a CFS quota from the CPU limit, the memory limit, and an OOM score
// adjustment by QoS class so that best-effort pods die first.
func containerResources(pod *corev1.Pod, c *corev1.Container, nodeMemory int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuShares: 2}
	req := c.Resources.Requests.Cpu().MilliValue()
	if req == 0 && !c.Resources.Limits.Cpu().IsZero() {
		req = c.Resources.Limits.Cpu().MilliValue()
	}
	if shares := req * 1024 / 1000; shares > 2 {
		r.CpuShares = shares
	}
	if lim := c.Resources.Limits.Cpu().MilliValue(); lim > 0 {
		r.CpuPeriod = cpuPeriod
		r.CpuQuota = max(lim*cpuPeriod/1000, 1000)
	}
	if mem := c.Resources.Limits.Memory().Value(); mem > 0 {
		r.MemoryLimitInBytes = mem
	}
	switch qosClass(pod) {
	case corev1.PodQOSGuaranteed:
		r.OomScoreAdj = guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		r.OomScoreAdj = besteffortOOMScoreAdj
	default:
		adj := int64(1000)
		if nodeMemory > 0 {
			adj = 1000 - (1000*c.Resources.Requests.Memory().Value())/nodeMemory
		}
		r.OomScoreAdj = min(max(adj, 2), 999)
	}
	return r
}

// podResources are the limits of the whole pod, for its cgroup: the sum
// of its containers' limits of a resource when all of them set one.
func podResources(pod *corev1.Pod) *runtimeapi.LinuxContainerResources {
	var cpu, mem int64
	cpuAll, memAll := true, true
	for _, c := range pod.Spec.Containers {
		l := c.Resources.Limits
		cpuAll = cpuAll && !l.Cpu().IsZero()
		memAll = memAll && !l.Memory().IsZero()
		cpu += l.Cpu().MilliValue()
		mem += l.Memory().Value()
	}
	r := &runtimeapi.LinuxContainerResources{}
	if cpuAll && cpu > 0 {
		r.CpuPeriod, r.CpuQuota = cpuPeriod, cpu*cpuPeriod/1000
	}
	if memAll && mem > 0 {
		r.MemoryLimitInBytes = mem
	}
	if r.CpuQuota == 0 && r.MemoryLimitInBytes == 0 {
		return nil
	}
	return r
}
