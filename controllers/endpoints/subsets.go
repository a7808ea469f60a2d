package endpoints

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"cairn/controllers/internal/clusterutil"
	"cairn/controllers/internal/svcendpoints"

	corev1 "k8s.io/api/core/v1"
)

// MaxCapacity is the most addresses one Endpoints object holds; past it
// the object is truncated and annotated, as in Kubernetes, and consumers
// are expected to read EndpointSlices instead.
const MaxCapacity = 1000

// AnnotationOverCapacity marks a truncated Endpoints object.
const AnnotationOverCapacity = "endpoints.kubernetes.io/over-capacity"

// address is one pod address with the ports it serves.
type address struct {
	addr  corev1.EndpointAddress
	ready bool
	ports []corev1.EndpointPort
}

// desiredSubsets builds svc's subsets from pods: ready pods (or every
// pod, when the service publishes unready addresses) in addresses, the
// others in notReadyAddresses; terminating pods only when unready ones
// are published. Addresses serving the same ports share a subset.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	publish := svc.Spec.PublishNotReadyAddresses
	var addrs []address
	for _, pod := range pods {
		if !svcendpoints.PodIncluded(pod, publish) {
			continue
		}
		ip := ipForService(svc, pod)
		if ip == "" {
			continue
		}
		a := address{
			addr: corev1.EndpointAddress{IP: ip, Hostname: svcendpoints.Hostname(pod, svc),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}},
			ready: publish || clusterutil.PodReady(pod),
		}
		if pod.Spec.NodeName != "" {
			a.addr.NodeName = &pod.Spec.NodeName
		}
		if len(svc.Spec.Ports) == 0 {
			// Only a headless service may have no ports: its addresses
			// are published for DNS alone.
			if svcendpoints.Headless(svc) {
				addrs = append(addrs, a)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := svcendpoints.FindPort(pod, sp)
			if err != nil {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			a.ports = append(a.ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: proto, AppProtocol: sp.AppProtocol})
		}
		if len(a.ports) > 0 {
			addrs = append(addrs, a)
		}
	}
	return pack(addrs)
}

// ipForService returns pod's IP of svc's primary family.
func ipForService(svc *corev1.Service, pod *corev1.Pod) string {
	want6 := len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	for _, s := range svcendpoints.PodIPs(pod) {
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is6() == want6 {
			return s
		}
	}
	return ""
}

// pack groups addresses by their port set into subsets, everything
// sorted so that an unchanged set of pods gives identical subsets.
func pack(addrs []address) []corev1.EndpointSubset {
	bySet := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, a := range addrs {
		sort.Slice(a.ports, func(i, j int) bool { return portString(a.ports[i]) < portString(a.ports[j]) })
		var kb strings.Builder
		for _, p := range a.ports {
			kb.WriteString(portString(p))
			kb.WriteByte(';')
		}
		k := kb.String()
		s, ok := bySet[k]
		if !ok {
			s = &corev1.EndpointSubset{Ports: a.ports}
			bySet[k] = s
			keys = append(keys, k)
		}
		if a.ready {
			s.Addresses = append(s.Addresses, a.addr)
		} else {
			s.NotReadyAddresses = append(s.NotReadyAddresses, a.addr)
		}
	}
	sort.Strings(keys)
	out := make([]corev1.EndpointSubset, 0, len(keys))
	for _, k := range keys {
		s := bySet[k]
		sortAddresses(s.Addresses)
		sortAddresses(s.NotReadyAddresses)
		out = append(out, *s)
	}
	return out
}

func portString(p corev1.EndpointPort) string {
	app := ""
	if p.AppProtocol != nil {
		app = *p.AppProtocol
	}
	return fmt.Sprintf("%s/%s/%d/%s", p.Name, p.Protocol, p.Port, app)
}

func sortAddresses(a []corev1.EndpointAddress) {
	sort.Slice(a, func(i, j int) bool {
		if a[i].IP != a[j].IP {
			return a[i].IP < a[j].IP
		}
		return a[i].TargetRef.UID < a[j].TargetRef.UID
	})
}

// truncate keeps at most MaxCapacity addresses, ready ones first, and
// reports whether it dropped any.
func truncate(subsets []corev1.EndpointSubset) bool {
	total := 0
	for _, s := range subsets {
		total += len(s.Addresses) + len(s.NotReadyAddresses)
	}
	if total <= MaxCapacity {
		return false
	}
	left := MaxCapacity
	for i := range subsets {
		n := min(left, len(subsets[i].Addresses))
		subsets[i].Addresses = subsets[i].Addresses[:n]
		left -= n
	}
	for i := range subsets {
		n := min(left, len(subsets[i].NotReadyAddresses))
		subsets[i].NotReadyAddresses = subsets[i].NotReadyAddresses[:n]
		left -= n
	}
	return true
}
