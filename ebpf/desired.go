package ebpf

import (
	"net/netip"
	"time"

	"cairn/ebpf/datapath"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// defaultAffinityTimeout is Kubernetes' default for sessionAffinity
// ClientIP without timeoutSeconds: three hours.
const defaultAffinityTimeout = 10800 * time.Second

// desiredServices is what the maps should hold for one Service: one entry
// per cluster IP and port. nodeName selects the endpoints of an
// internalTrafficPolicy Local service.
//
// Backends are the ready endpoints; when none is ready, the serving and
// terminating ones, so that a rolling update of the last pod does not
// drop traffic. A named targetPort is resolved per slice: each slice
// carries the port number its own endpoints use for the port's name.
func desiredServices(svc *corev1.Service, slices []*discoveryv1.EndpointSlice, nodeName string) []datapath.Service {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var affinity time.Duration
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = defaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	local := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal

	var out []datapath.Service
	for _, ipStr := range ips {
		ip, err := netip.ParseAddr(ipStr)
		if err != nil {
			continue // "None" for a headless service
		}
		family := discoveryv1.AddressTypeIPv4
		if ip.Is6() {
			family = discoveryv1.AddressTypeIPv6
		}
		for _, sp := range svc.Spec.Ports {
			proto, ok := protocol(sp.Protocol)
			if !ok {
				continue
			}
			out = append(out, datapath.Service{
				Frontend:        datapath.Frontend{Addr: ip, Port: uint16(sp.Port), Proto: proto},
				Backends:        backendsFor(sp, slices, family, local, nodeName),
				AffinityTimeout: affinity,
			})
		}
	}
	return out
}

func protocol(p corev1.Protocol) (datapath.Proto, bool) {
	switch p {
	case corev1.ProtocolTCP, "":
		return datapath.TCP, true
	case corev1.ProtocolUDP:
		return datapath.UDP, true
	}
	return 0, false
}

func backendsFor(sp corev1.ServicePort, slices []*discoveryv1.EndpointSlice, family discoveryv1.AddressType, local bool, nodeName string) []netip.AddrPort {
	var ready, terminating []netip.AddrPort
	for _, slice := range slices {
		if slice.AddressType != family {
			continue
		}
		port, ok := slicePort(slice, sp)
		if !ok {
			continue
		}
		for _, ep := range slice.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			if local && (ep.NodeName == nil || *ep.NodeName != nodeName) {
				continue
			}
			// The EndpointSlice controller writes one address per
			// endpoint; others are alternatives, not extra backends.
			addr, err := netip.ParseAddr(ep.Addresses[0])
			if err != nil {
				continue
			}
			ap := netip.AddrPortFrom(addr, port)
			c := ep.Conditions
			isReady := c.Ready == nil || *c.Ready
			serving := c.Serving == nil || *c.Serving
			isTerminating := c.Terminating != nil && *c.Terminating
			switch {
			case isReady:
				ready = append(ready, ap)
			case serving && isTerminating:
				terminating = append(terminating, ap)
			}
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// slicePort finds the port number the slice's endpoints use for sp: the
// slice port of the same name and protocol.
func slicePort(slice *discoveryv1.EndpointSlice, sp corev1.ServicePort) (uint16, bool) {
	want := sp.Protocol
	if want == "" {
		want = corev1.ProtocolTCP
	}
	for _, p := range slice.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == sp.Name && proto == want && p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}
