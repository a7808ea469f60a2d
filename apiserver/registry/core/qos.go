package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodQOSClass computes a pod's quality of service class from its
// containers' cpu and memory: BestEffort without any, Guaranteed when
// every container's requests equal its limits for both, else Burstable.
// It is computed once on create, as Kubernetes does, since the kubelet
// relies on it not changing.
func PodQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		sum := list[name]
		sum.Add(q)
		list[name] = sum
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for name, q := range c.Resources.Requests {
			if qosResource(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		found := 0
		for name, q := range c.Resources.Limits {
			if qosResource(name) && q.Sign() > 0 {
				add(limits, name, q)
				found++
			}
		}
		if found < 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed && len(requests) == len(limits) {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				return corev1.PodQOSBurstable
			}
		}
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func qosResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}
