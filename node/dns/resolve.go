package dns

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// ttl is the time to live of every answer, as CoreDNS's kubernetes
// plugin gives by default: short, since Services and endpoints change.
const ttl = 5

// zone answers for the cluster domain from the listers.
type zone struct {
	origin   string // the domain, fully qualified: "cluster.local."
	services corelisters.ServiceLister
	slicesOf discoverylisters.EndpointSliceLister
}

// answer is what the zone says of one question.
type answer struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
	// cname is an ExternalName Service's target outside the zone, for
	// the caller to resolve further.
	cname string
}

// contains reports whether name (fully qualified, any case) is in the
// zone.
func (z *zone) contains(name string) bool {
	return dns.IsSubDomain(z.origin, strings.ToLower(name))
}

// soa is the zone's start of authority, which negative answers carry so
// that resolvers cache them only briefly.
func (z *zone) soa() dns.RR {
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: z.origin, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl},
		Ns:  "ns.dns." + z.origin, Mbox: "hostmaster." + z.origin,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl,
	}
}

// resolve answers q, a question for a name in the zone.
func (z *zone) resolve(q dns.Question) answer {
	name := strings.ToLower(q.Name)
	rel := strings.TrimSuffix(strings.TrimSuffix(name, z.origin), ".")
	var labels []string
	if rel != "" {
		labels = strings.Split(rel, ".")
	}
	n := len(labels)
	switch {
	case n == 0:
		if q.Qtype == dns.TypeSOA {
			return answer{rcode: dns.RcodeSuccess, answer: []dns.RR{z.soa()}}
		}
		return answer{rcode: dns.RcodeSuccess}
	case labels[n-1] == "svc":
		return z.service(q, labels[:n-1])
	case labels[n-1] == "pod":
		return z.pod(q, labels[:n-1])
	}
	return answer{rcode: dns.RcodeNameError}
}

// service answers names under svc: labels are what precedes it.
func (z *zone) service(q dns.Question, labels []string) answer {
	switch len(labels) {
	case 0, 1: // svc.DOMAIN, ns.svc.DOMAIN: names with nothing of their own
		return answer{rcode: dns.RcodeSuccess}
	case 2:
		svc, ok := z.lookup(labels[1], labels[0])
		if !ok {
			return answer{rcode: dns.RcodeNameError}
		}
		return z.serviceRecords(q, svc)
	case 3:
		svc, ok := z.lookup(labels[2], labels[1])
		if !ok || !headless(svc) {
			return answer{rcode: dns.RcodeNameError}
		}
		var addrs []netip.Addr
		for _, ep := range z.endpoints(svc) {
			if ep.Hostname != nil && strings.EqualFold(*ep.Hostname, labels[0]) {
				addrs = append(addrs, endpointAddrs(ep)...)
			}
		}
		if len(addrs) == 0 {
			return answer{rcode: dns.RcodeNameError}
		}
		return answer{rcode: dns.RcodeSuccess, answer: addressRecords(q, addrs)}
	case 4:
		if !strings.HasPrefix(labels[0], "_") || !strings.HasPrefix(labels[1], "_") {
			return answer{rcode: dns.RcodeNameError}
		}
		svc, ok := z.lookup(labels[3], labels[2])
		if !ok {
			return answer{rcode: dns.RcodeNameError}
		}
		return z.srv(q, svc, labels[0][1:], labels[1][1:])
	}
	return answer{rcode: dns.RcodeNameError}
}

func (z *zone) lookup(ns, name string) (*corev1.Service, bool) {
	svc, err := z.services.Services(ns).Get(name)
	return svc, err == nil
}

func headless(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == corev1.ClusterIPNone
}

// serviceRecords answers for svc.ns.svc.DOMAIN.
func (z *zone) serviceRecords(q dns.Question, svc *corev1.Service) answer {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		target := dns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
		if _, ok := dns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
			return answer{rcode: dns.RcodeNameError}
		}
		rr := &dns.CNAME{Hdr: header(q.Name, dns.TypeCNAME), Target: target}
		a := answer{rcode: dns.RcodeSuccess, answer: []dns.RR{rr}}
		if q.Qtype != dns.TypeCNAME {
			a.cname = target
		}
		return a
	}
	var addrs []netip.Addr
	if headless(svc) {
		for _, ep := range z.endpoints(svc) {
			addrs = append(addrs, endpointAddrs(ep)...)
		}
	} else {
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				addrs = append(addrs, ip)
			}
		}
	}
	return answer{rcode: dns.RcodeSuccess, answer: addressRecords(q, addrs)}
}

// srv answers _port._proto.svc.ns.svc.DOMAIN: one record for a Service
// with a ClusterIP, one per endpoint for a headless one, each with the
// addresses of its target as extra records.
func (z *zone) srv(q dns.Question, svc *corev1.Service, port, proto string) answer {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return answer{rcode: dns.RcodeNameError}
	}
	var number int32
	found := false
	for _, p := range svc.Spec.Ports {
		pp := string(p.Protocol)
		if pp == "" {
			pp = string(corev1.ProtocolTCP)
		}
		if p.Name != "" && strings.EqualFold(p.Name, port) && strings.EqualFold(pp, proto) {
			number, found = p.Port, true
		}
	}
	if !found {
		return answer{rcode: dns.RcodeNameError}
	}
	if q.Qtype != dns.TypeSRV && q.Qtype != dns.TypeANY {
		return answer{rcode: dns.RcodeSuccess}
	}
	svcName := svc.Name + "." + svc.Namespace + ".svc." + z.origin
	var a answer
	a.rcode = dns.RcodeSuccess
	if !headless(svc) {
		a.answer = []dns.RR{&dns.SRV{Hdr: header(q.Name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(number), Target: svcName}}
		a.extra = z.serviceRecords(dns.Question{Name: svcName, Qtype: dns.TypeA, Qclass: dns.ClassINET}, svc).answer
		a.extra = append(a.extra, z.serviceRecords(dns.Question{Name: svcName, Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}, svc).answer...)
		return a
	}
	// Headless: the endpoints' own port of that name.
	for _, s := range z.slices(svc) {
		var epPort int32 = -1
		for _, p := range s.Ports {
			pp := corev1.ProtocolTCP
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			if p.Name != nil && strings.EqualFold(*p.Name, port) && strings.EqualFold(string(pp), proto) && p.Port != nil {
				epPort = *p.Port
			}
		}
		if epPort < 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if !serving(svc, ep) {
				continue
			}
			for _, ip := range endpointAddrs(ep) {
				target := endpointHost(ep, ip) + "." + svcName
				a.answer = append(a.answer, &dns.SRV{Hdr: header(q.Name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(epPort), Target: target})
				a.extra = append(a.extra, addressRecords(dns.Question{Name: target, Qtype: dns.TypeANY}, []netip.Addr{ip})...)
			}
		}
	}
	return a
}

// pod answers a-b-c-d.ns.pod.DOMAIN with the address its first label
// spells, as kube-dns and CoreDNS do by default.
func (z *zone) pod(q dns.Question, labels []string) answer {
	switch len(labels) {
	case 0, 1:
		return answer{rcode: dns.RcodeSuccess}
	case 2:
	default:
		return answer{rcode: dns.RcodeNameError}
	}
	spelled := labels[0]
	text := strings.ReplaceAll(spelled, "-", ".")
	if strings.Count(spelled, "-") != 3 {
		text = strings.ReplaceAll(spelled, "-", ":")
	}
	ip, err := netip.ParseAddr(text)
	if err != nil {
		return answer{rcode: dns.RcodeNameError}
	}
	return answer{rcode: dns.RcodeSuccess, answer: addressRecords(q, []netip.Addr{ip})}
}

// slices lists the EndpointSlices of svc.
func (z *zone) slices(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	out, err := z.slicesOf.EndpointSlices(svc.Namespace).List(sel)
	if err != nil {
		return nil
	}
	return out
}

// endpoints lists the endpoints of svc that serve: ready ones, or every
// one when the Service publishes not-ready addresses.
func (z *zone) endpoints(svc *corev1.Service) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	seen := map[string]bool{}
	for _, s := range z.slices(svc) {
		for _, ep := range s.Endpoints {
			if !serving(svc, ep) {
				continue
			}
			key := strings.Join(ep.Addresses, ",")
			if ep.Hostname != nil {
				key += "/" + *ep.Hostname
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, ep)
			}
		}
	}
	return out
}

func serving(svc *corev1.Service, ep discoveryv1.Endpoint) bool {
	return svc.Spec.PublishNotReadyAddresses || ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

// endpointHost is the label of a headless Service's endpoint at ip: its
// hostname, or else its address with dashes.
func endpointHost(ep discoveryv1.Endpoint, ip netip.Addr) string {
	if ep.Hostname != nil && *ep.Hostname != "" {
		return strings.ToLower(*ep.Hostname)
	}
	return strings.NewReplacer(".", "-", ":", "-").Replace(ip.String())
}

func endpointAddrs(ep discoveryv1.Endpoint) []netip.Addr {
	var out []netip.Addr
	for _, s := range ep.Addresses {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// addressRecords are the A (IPv4) or AAAA (IPv6) records of addrs that
// q asks for; TypeANY gives both.
func addressRecords(q dns.Question, addrs []netip.Addr) []dns.RR {
	var out []dns.RR
	seen := map[netip.Addr]bool{}
	for _, ip := range addrs {
		if seen[ip] {
			continue
		}
		seen[ip] = true
		switch {
		case ip.Is4() && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY):
			out = append(out, &dns.A{Hdr: header(q.Name, dns.TypeA), A: ip.AsSlice()})
		case ip.Is6() && (q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY):
			out = append(out, &dns.AAAA{Hdr: header(q.Name, dns.TypeAAAA), AAAA: ip.AsSlice()})
		}
	}
	return out
}

func header(name string, typ uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: typ, Class: dns.ClassINET, Ttl: ttl}
}

// reverse names the cluster's own address ip: a Service's ClusterIP
// gives the Service's name; an endpoint of a headless Service gives its
// name under the Service. None: ip is not the cluster's to name.
func (z *zone) reverse(ip netip.Addr) []string {
	var names []string
	services, _ := z.services.List(labels.Everything())
	for _, svc := range services {
		for _, s := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(s); err == nil && a == ip {
				names = append(names, svc.Name+"."+svc.Namespace+".svc."+z.origin)
			}
		}
	}
	slices, _ := z.slicesOf.List(labels.Everything())
	for _, s := range slices {
		svc, ok := z.lookup(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		if !ok || !headless(svc) {
			continue
		}
		for _, ep := range s.Endpoints {
			for _, a := range endpointAddrs(ep) {
				if a != ip {
					continue
				}
				names = append(names, endpointHost(ep, a)+"."+svc.Name+"."+svc.Namespace+".svc."+z.origin)
			}
		}
	}
	return names
}

// reverseAddr reads the address of a reverse lookup's name, e.g.
// 4.3.2.1.in-addr.arpa. for 1.2.3.4.
func reverseAddr(name string) (netip.Addr, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa"); ok {
		octets := strings.Split(rest, ".")
		if len(octets) != 4 {
			return netip.Addr{}, false
		}
		slices.Reverse(octets)
		ip, err := netip.ParseAddr(strings.Join(octets, "."))
		return ip, err == nil && ip.Is4()
	}
	if rest, ok := strings.CutSuffix(name, ".ip6.arpa"); ok {
		nibbles := strings.Split(rest, ".")
		if len(nibbles) != 32 {
			return netip.Addr{}, false
		}
		slices.Reverse(nibbles)
		var b strings.Builder
		for i, n := range nibbles {
			if len(n) != 1 {
				return netip.Addr{}, false
			}
			if i > 0 && i%4 == 0 {
				b.WriteByte(':')
			}
			b.WriteString(n)
		}
		ip, err := netip.ParseAddr(b.String())
		return ip, err == nil && ip.Is6()
	}
	return netip.Addr{}, false
}
