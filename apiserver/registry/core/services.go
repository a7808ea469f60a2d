package core

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
// immutable fields.
func keepAllocated(svc, old *corev1.Service) {
	s, o := &svc.Spec, &old.Spec
	if s.Type != corev1.ServiceTypeExternalName && o.Type != corev1.ServiceTypeExternalName {
		if s.ClusterIP == "" && len(s.ClusterIPs) == 0 {
			s.ClusterIP = o.ClusterIP
			s.ClusterIPs = append([]string(nil), o.ClusterIPs...)
		}
		if s.ClusterIP != o.ClusterIP && apiequality.Semantic.DeepEqual(s.ClusterIPs, o.ClusterIPs) && len(s.ClusterIPs) > 0 {
			s.ClusterIPs = append([]string(nil), s.ClusterIPs...)
			s.ClusterIPs[0] = s.ClusterIP
		}
	}
	if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Ports {
			p := &s.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			for _, op := range o.Ports {
				if op.Port == p.Port && op.Protocol == p.Protocol {
					p.NodePort = op.NodePort
				}
			}
		}
	}
	if s.HealthCheckNodePort == 0 && s.Type == corev1.ServiceTypeLoadBalancer && s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		s.HealthCheckNodePort = o.HealthCheckNodePort
	}
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
