package kubelet

import (
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The CRI labels and annotations the kubelet puts on sandboxes and
// containers, named as Kubernetes names them, so that a restarted agent
// (or crictl) can tell which pod and container each one is.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	// labelManagedBy marks what this agent created, so cleanup never
	// touches another user's sandboxes on a shared runtime.
	labelManagedBy = "io.cairn.managed-by"

	annotationRestartCount           = "io.kubernetes.container.restartCount"
	annotationHash                   = "io.kubernetes.container.hash"
	annotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	annotationGracePeriod            = "io.kubernetes.pod.terminationGracePeriod"
)

// managedByValue is labelManagedBy's value.
const managedByValue = "cairn-kubelet"

func sandboxLabels(pod *corev1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+4)
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[labelPodName] = pod.Name
	l[labelPodNamespace] = pod.Namespace
	l[labelPodUID] = string(pod.UID)
	l[labelManagedBy] = managedByValue
	return l
}

func containerLabels(pod *corev1.Pod, c *corev1.Container) map[string]string {
	return map[string]string{
		labelPodName:       pod.Name,
		labelPodNamespace:  pod.Namespace,
		labelPodUID:        string(pod.UID),
		labelContainerName: c.Name,
		labelManagedBy:     managedByValue,
	}
}

// containerAnnotations record what stopping the container needs even
// once its pod is gone from the API: its grace period.
func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int32) map[string]string {
	a := map[string]string{
		annotationHash:                   containerHash(c),
		annotationRestartCount:           strconv.Itoa(int(restartCount)),
		annotationTerminationMessagePath: c.TerminationMessagePath,
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[annotationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	return a
}

// containerHash identifies what of a container's spec may change while
// its pod lives (the image, as Kubernetes allows): an instance whose
// hash differs from its spec's is replaced.
func containerHash(c *corev1.Container) string {
	h := fnv.New32a()
	h.Write([]byte(c.Image))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// podUIDLabel selects a pod's sandboxes or containers.
func podUIDLabel(uid types.UID) map[string]string {
	return map[string]string{labelPodUID: string(uid), labelManagedBy: managedByValue}
}
