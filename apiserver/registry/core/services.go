package core

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/internal/strategy"
)

// defaultClientIPAffinitySeconds is Kubernetes' ClientIP affinity timeout (3 hours).
const defaultClientIPAffinitySeconds int32 = 10800

// ServiceStrategy returns the rules of services. The cluster IP itself is
// allocated by the caller after PrepareForCreate; an update that leaves the
// cluster IP or a node port out keeps the allocated one, as kubectl replace
// expects.
func ServiceStrategy() strategy.Funcs[*corev1.Service] {
	return strategy.Funcs[*corev1.Service]{
		DefaultFunc: defaultService,
		PrepareForCreateFunc: func(_ context.Context, svc *corev1.Service) {
			svc.Status = corev1.ServiceStatus{}
		},
		PrepareForUpdateFunc: func(_ context.Context, svc, old *corev1.Service) {
			svc.Status = old.Status
			dropTypeDependentFields(svc, old)
			keepAllocated(svc, old)
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, svc, old *corev1.Service) {
			svc.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(svc, old)
		},
		ValidateFunc: func(_ context.Context, svc *corev1.Service) field.ErrorList {
			return validateService(svc, nil)
		},
		ValidateUpdateFunc: validateServiceUpdate,
		SpecChangedFunc: func(svc, old *corev1.Service) bool {
			return !apiequality.Semantic.DeepEqual(svc.Spec, old.Spec)
		},
	}
}

// externallyAccessible reports a service reachable from outside the
// cluster, which is when the external traffic policy means something.
func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer ||
		svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func defaultService(svc *corev1.Service) {
	s := &svc.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityNone {
		s.SessionAffinityConfig = nil
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(defaultClientIPAffinitySeconds)}}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if targetPortUnset(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.InternalTrafficPolicy == nil && s.Type != corev1.ServiceTypeExternalName {
		s.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		s.AllocateLoadBalancerNodePorts = ptr.To(true)
	}
	if s.Type == corev1.ServiceTypeExternalName {
		return
	}
	switch {
	case s.ClusterIP != "" && len(s.ClusterIPs) == 0:
		s.ClusterIPs = []string{s.ClusterIP}
	case s.ClusterIP == "" && len(s.ClusterIPs) > 0:
		s.ClusterIP = s.ClusterIPs[0]
	}
	defaultIPFamilies(svc)
}

// defaultIPFamilies fills the families the cluster IP allocator would: one
// family, that of the requested IP or else IPv4. A headless service without
// a selector gets no IP, so Kubernetes lets it carry every family.
func defaultIPFamilies(svc *corev1.Service) {
	s := &svc.Spec
	if s.IPFamilyPolicy == nil {
		if s.ClusterIP == corev1.ClusterIPNone && len(s.Selector) == 0 {
			s.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		} else {
			s.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if len(s.IPFamilies) > 0 {
		return
	}
	family := corev1.IPv4Protocol
	if addr, err := netip.ParseAddr(s.ClusterIP); err == nil && addr.Is6() {
		family = corev1.IPv6Protocol
	}
	s.IPFamilies = []corev1.IPFamily{family}
}

// keepAllocated carries over what the server allocated (cluster IPs, node
// ports, health check node port) when an update leaves it out, so that
// replacing a service with its original manifest does not try to change
// immutable fields. As in Kubernetes, it only applies while the service
// keeps needing the value, and node ports follow their port's name (the
// port number may change) unless another port of the update claims them.
func keepAllocated(svc, old *corev1.Service) {
	s, o := &svc.Spec, &old.Spec
	if needsClusterIP(svc) && needsClusterIP(old) {
		if s.ClusterIP == "" && len(s.ClusterIPs) == 0 {
			s.ClusterIP = o.ClusterIP
			s.ClusterIPs = append([]string(nil), o.ClusterIPs...)
			// The families were defaulted before the IP came back; they
			// are the stored IP's.
			if len(o.IPFamilies) > 0 {
				s.IPFamilies = append([]corev1.IPFamily(nil), o.IPFamilies...)
			}
		}
		if s.ClusterIP != o.ClusterIP && apiequality.Semantic.DeepEqual(s.ClusterIPs, o.ClusterIPs) && len(s.ClusterIPs) > 0 {
			s.ClusterIPs = append([]string(nil), s.ClusterIPs...)
			s.ClusterIPs[0] = s.ClusterIP
		}
	}
	if needsNodePorts(svc) && needsNodePorts(old) {
		used := map[int32]bool{}
		for _, p := range s.Ports {
			used[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range o.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range s.Ports {
			p := &s.Ports[i]
			if np := byName[p.Name]; p.NodePort == 0 && !used[np] {
				p.NodePort = np
			}
		}
	}
	if needsHealthCheckNodePort(svc) && needsHealthCheckNodePort(old) && s.HealthCheckNodePort == 0 {
		s.HealthCheckNodePort = o.HealthCheckNodePort
	}
}

// dropTypeDependentFields clears, when an update changes the service's
// type, what the old type needed and the new one forbids, as Kubernetes
// does: only values the update left as they were (so allocated, or set
// for the old type), never ones the client changed, which validation then
// judges. The allocator releases what was dropped once the update is
// stored.
func dropTypeDependentFields(svc, old *corev1.Service) {
	s, o := &svc.Spec, &old.Spec
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if apiequality.Semantic.DeepEqual(s.ClusterIPs, o.ClusterIPs) && s.ClusterIP == o.ClusterIP {
			s.ClusterIP, s.ClusterIPs = "", nil
		}
		if apiequality.Semantic.DeepEqual(s.IPFamilies, o.IPFamilies) {
			s.IPFamilies = nil
		}
		if apiequality.Semantic.DeepEqual(s.IPFamilyPolicy, o.IPFamilyPolicy) {
			s.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && sameNodePorts(svc, old) {
		for i := range s.Ports {
			s.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && s.HealthCheckNodePort == o.HealthCheckNodePort {
		s.HealthCheckNodePort = 0
	}
	if o.Type == corev1.ServiceTypeLoadBalancer && s.Type != corev1.ServiceTypeLoadBalancer {
		if s.AllocateLoadBalancerNodePorts != nil && o.AllocateLoadBalancerNodePorts != nil && *s.AllocateLoadBalancerNodePorts == *o.AllocateLoadBalancerNodePorts {
			s.AllocateLoadBalancerNodePorts = nil
		}
		if apiequality.Semantic.DeepEqual(s.LoadBalancerClass, o.LoadBalancerClass) {
			s.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && s.ExternalTrafficPolicy == o.ExternalTrafficPolicy {
		s.ExternalTrafficPolicy = ""
	}
	if s.Type == corev1.ServiceTypeExternalName && apiequality.Semantic.DeepEqual(s.InternalTrafficPolicy, o.InternalTrafficPolicy) {
		s.InternalTrafficPolicy = nil
	}
	// A load balancer's address goes with its type; its teardown is the
	// provider's business, not the user's.
	if s.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// needsClusterIP reports a service type that has a cluster IP (or None).
func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

// needsNodePorts reports a service type that opens node ports.
func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// needsHealthCheckNodePort reports a load balancer that only sends
// traffic to nodes with local endpoints, which it checks on that port.
func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// sameNodePorts reports whether svc asks for the same set of node ports
// as old holds.
func sameNodePorts(svc, old *corev1.Service) bool {
	set := func(s *corev1.Service) sets.Set[int32] {
		out := sets.New[int32]()
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				out.Insert(p.NodePort)
			}
		}
		return out
	}
	return set(svc).Equal(set(old))
}

// targetPortUnset reports whether a service port's targetPort was left out.
func targetPortUnset(p intstr.IntOrString) bool {
	return p == intstr.FromInt32(0) || p == intstr.FromString("")
}

// roundUpToMilli rounds quantities up to milli precision, the finest the
// API keeps, so that "0.0001" cpu is stored as "1m" rather than refused.
func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}
