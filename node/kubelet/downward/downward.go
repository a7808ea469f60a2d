// Package downward resolves the pod and container fields that the
// downward API exposes, to env vars and to downwardAPI volume files.
package downward

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodIPs are the addresses only the node knows when the pod runs.
type PodIPs struct {
	PodIPs  []string
	HostIPs []string
}

// FieldValue returns the value of a fieldRef path of pod, as Kubernetes
// supports them: metadata.name, metadata.namespace, metadata.uid,
// metadata.labels, metadata.annotations, metadata.labels['k'],
// metadata.annotations['k'], spec.nodeName, spec.serviceAccountName,
// status.podIP, status.podIPs, status.hostIP, status.hostIPs.
func FieldValue(pod *corev1.Pod, path string, ips PodIPs) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(ips.PodIPs), nil
	case "status.podIPs":
		return strings.Join(ips.PodIPs, ","), nil
	case "status.hostIP":
		return first(ips.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(ips.HostIPs, ","), nil
	}
	return "", fmt.Errorf("downward: unsupported fieldPath %q", path)
}

// subscript reads "prefix['key']" and returns key.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// FormatMap renders labels or annotations as a downwardAPI file shows
// them: one key="value" per line, sorted by key, values quoted as Go
// strings.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// ResourceValue returns a container's resource as resourceFieldRef
// exposes it: limits.cpu, limits.memory, limits.ephemeral-storage,
// limits.hugepages-*, and the same under requests. A limit the container
// does not set is the node's allocatable amount. The value is divided by
// divisor (1 when zero) and rounded up, so 250m of CPU reads as 1.
func ResourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("downward: unsupported resource %q", ref.Resource)
	}
	rn := corev1.ResourceName(name)
	var q resource.Quantity
	switch kind {
	case "limits":
		v, set := c.Resources.Limits[rn]
		if !set {
			v = allocatable[rn]
		}
		q = v
	case "requests":
		v, set := c.Resources.Requests[rn]
		if !set {
			// An unset request defaults to the limit, as the API server
			// defaults it; with neither it is zero.
			v = c.Resources.Limits[rn]
		}
		q = v
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	if rn != corev1.ResourceMemory && rn != corev1.ResourceEphemeralStorage && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return "", fmt.Errorf("downward: unsupported resource %q", ref.Resource)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// FindContainer returns the container of pod named name, init or regular.
func FindContainer(pod *corev1.Pod, name string) (*corev1.Container, bool) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], true
		}
	}
	return nil, false
}
