package endpointslice

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"cairn/controllers/internal/clusterutil"
	"cairn/controllers/internal/svcendpoints"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

// group is the endpoints of a service that share an address type and a
// set of ports; each group is stored in slices of its own, since a slice
// has one address type and one port list for all its endpoints (pods may
// resolve a named target port differently).
type group struct {
	addrType  discoveryv1.AddressType
	ports     []discoveryv1.EndpointPort
	endpoints map[string]discoveryv1.Endpoint // by address
}

// desiredGroups builds the endpoints svc should have from pods, keyed by
// groupKey.
func desiredGroups(svc *corev1.Service, pods []*corev1.Pod, nodes corelisters.NodeLister) map[string]*group {
	groups := map[string]*group{}
	types := addressTypes(svc)
	for _, pod := range pods {
		if !svcendpoints.PodIncluded(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		for _, at := range types {
			addr := addressOf(pod, at)
			if addr == "" {
				continue
			}
			key := groupKey(at, ports)
			g, ok := groups[key]
			if !ok {
				g = &group{addrType: at, ports: ports, endpoints: map[string]discoveryv1.Endpoint{}}
				groups[key] = g
			}
			g.endpoints[addr] = endpointFor(svc, pod, addr, nodes)
		}
	}
	return groups
}

// addressTypes are the slice address types of svc: one per IP family it
// serves.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) == 0 {
		// Families are defaulted on create; a service without them
		// predates that and is IPv4 unless its cluster IP says otherwise.
		if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is6() {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		out = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return out
}

// addressOf returns pod's first IP of the family of at.
func addressOf(pod *corev1.Pod, at discoveryv1.AddressType) string {
	for _, s := range svcendpoints.PodIPs(pod) {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if (at == discoveryv1.AddressTypeIPv6) == (ip.Is6() && !ip.Is4In6()) {
			return s
		}
	}
	return ""
}

// endpointPorts resolves svc's ports on pod, sorted; a port whose named
// target the pod lacks is left out for that pod.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var ports []discoveryv1.EndpointPort
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
		ports = append(ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(n), Protocol: ptr.To(proto), AppProtocol: sp.AppProtocol,
		})
	}
	sortPorts(ports)
	return ports
}

func sortPorts(ports []discoveryv1.EndpointPort) {
	sort.Slice(ports, func(i, j int) bool { return portKey(ports[i]) < portKey(ports[j]) })
}

func portKey(p discoveryv1.EndpointPort) string {
	return fmt.Sprintf("%s/%s/%d/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Protocol, corev1.ProtocolTCP), ptr.Deref(p.Port, 0), ptr.Deref(p.AppProtocol, ""))
}

// groupKey names the group of an address type and (sorted) ports.
func groupKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	b.WriteString(string(at))
	for _, p := range ports {
		b.WriteByte(';')
		b.WriteString(portKey(p))
	}
	return b.String()
}

// sliceGroupKey is the group an existing slice holds.
func sliceGroupKey(s *discoveryv1.EndpointSlice) string {
	ports := append([]discoveryv1.EndpointPort(nil), s.Ports...)
	sortPorts(ports)
	return groupKey(s.AddressType, ports)
}

func endpointFor(svc *corev1.Service, pod *corev1.Pod, addr string, nodes corelisters.NodeLister) discoveryv1.Endpoint {
	serving := svc.Spec.PublishNotReadyAddresses || clusterutil.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	// A terminating pod is never ready, unless the service publishes
	// everything.
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(serving), Terminating: ptr.To(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if h := svcendpoints.Hostname(pod, svc); h != "" {
		ep.Hostname = ptr.To(h)
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr.To(pod.Spec.NodeName)
		if node, err := nodes.Get(pod.Spec.NodeName); err == nil {
			if z, ok := node.Labels[corev1.LabelTopologyZone]; ok {
				ep.Zone = ptr.To(z)
			}
		}
	}
	return ep
}
