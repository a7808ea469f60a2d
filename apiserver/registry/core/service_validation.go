package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	serviceTypes     = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	ipFamilyPolicies = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
)

// maxClientIPAffinitySeconds is one day, Kubernetes' upper bound.
const maxClientIPAffinitySeconds = 86400

func validateService(svc *corev1.Service, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&svc.ObjectMeta, old, true, apimachineryvalidation.NameIsDNS1035Label)
	s := &svc.Spec
	specPath := field.NewPath("spec")
	headless := s.ClusterIP == corev1.ClusterIPNone

	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		if len(s.ClusterIPs) > 0 || s.ClusterIP != "" {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if s.ExternalName == "" {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		} else {
			errs = append(errs, validateDNS1123Subdomain(s.ExternalName, specPath.Child("externalName"))...)
		}
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), s.Type, serviceTypes))
	}
	if len(s.Ports) == 0 && !headless && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	errs = append(errs, validateServicePorts(svc, specPath.Child("ports"))...)
	errs = append(errs, metav1validation.ValidateLabels(s.Selector, specPath.Child("selector"))...)
	errs = append(errs, validateSessionAffinity(s, specPath)...)
	errs = append(errs, validateClusterIPs(s, specPath)...)
	errs = append(errs, validateIPFamilies(s, specPath)...)
	for i, ip := range s.ExternalIPs {
		errs = append(errs, validateIP(ip, specPath.Child("externalIPs").Index(i))...)
	}
	errs = append(errs, validateTrafficPolicies(svc, specPath)...)
	return errs
}

func validateServicePorts(svc *corev1.Service, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	requireName := len(svc.Spec.Ports) > 1
	names := sets.New[string]()
	type portKey struct {
		port     int32
		protocol corev1.Protocol
	}
	seen := map[portKey]bool{}
	// One node port serves one protocol of one port; the same node port
	// for TCP and UDP is fine.
	nodePorts := map[portKey]bool{}
	for i, p := range svc.Spec.Ports {
		idx := fldPath.Index(i)
		switch {
		case p.Name == "" && requireName:
			errs = append(errs, field.Required(idx.Child("name"), ""))
		case p.Name != "":
			errs = append(errs, validateDNS1123Label(p.Name, idx.Child("name"))...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		errs = append(errs, validatePortNum(p.Port, idx.Child("port"))...)
		errs = append(errs, validateProtocol(p.Protocol, idx.Child("protocol"))...)
		errs = append(errs, validatePortNumOrName(p.TargetPort, idx.Child("targetPort"))...)
		if p.NodePort != 0 {
			if svc.Spec.Type == corev1.ServiceTypeClusterIP || svc.Spec.Type == corev1.ServiceTypeExternalName {
				errs = append(errs, field.Forbidden(idx.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", svc.Spec.Type)))
			} else {
				errs = append(errs, validatePortNum(p.NodePort, idx.Child("nodePort"))...)
			}
			if np := (portKey{p.NodePort, p.Protocol}); nodePorts[np] {
				errs = append(errs, field.Duplicate(idx.Child("nodePort"), p.NodePort))
			} else {
				nodePorts[np] = true
			}
		}
		key := portKey{p.Port, p.Protocol}
		if seen[key] {
			errs = append(errs, field.Duplicate(idx, fmt.Sprintf("%d/%s", p.Port, p.Protocol)))
		}
		seen[key] = true
	}
	return errs
}

func validateSessionAffinity(s *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.SessionAffinity {
	case corev1.ServiceAffinityNone:
		if s.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	case corev1.ServiceAffinityClientIP:
		if c := s.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
				errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t,
					fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
			}
		}
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), s.SessionAffinity,
			[]corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}
	return errs
}

func validateClusterIPs(s *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	if len(s.ClusterIPs) > 0 && s.ClusterIPs[0] != s.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "first value must match `clusterIP`"))
	}
	if len(s.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may only hold up to 2 values"))
	}
	for i, ip := range s.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			if i != 0 || len(s.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "'None' must be the first and only value"))
			}
			if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer {
				errs = append(errs, field.Invalid(ipsPath.Index(0), ip, fmt.Sprintf("may not be set to 'None' for %s services", s.Type)))
			}
			continue
		}
		errs = append(errs, validateIP(ip, ipsPath.Index(i))...)
	}
	return errs
}

func validateIPFamilies(s *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := s.IPFamilyPolicy; p != nil && !sets.New(ipFamilyPolicies...).Has(*p) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, ipFamilyPolicies))
	}
	famPath := specPath.Child("ipFamilies")
	seen := sets.New[corev1.IPFamily]()
	for i, f := range s.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(famPath.Index(i), f, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		} else if seen.Has(f) {
			errs = append(errs, field.Duplicate(famPath.Index(i), f))
		}
		seen.Insert(f)
	}
	if len(s.IPFamilies) > 1 && s.IPFamilyPolicy != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		errs = append(errs, field.Invalid(famPath, s.IPFamilies, "when multiple IP families are specified, IP family policy must be PreferDualStack or RequireDualStack"))
	}
	if s.Type == corev1.ServiceTypeExternalName && (len(s.IPFamilies) > 0 || s.IPFamilyPolicy != nil) {
		errs = append(errs, field.Forbidden(famPath, "may not be set for ExternalName services"))
	}
	return errs
}

func validateTrafficPolicies(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	etpPath := specPath.Child("externalTrafficPolicy")
	switch {
	case !externallyAccessible(svc):
		if s.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etpPath, s.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	case s.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etpPath, ""))
	case s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster && s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal:
		errs = append(errs, field.NotSupported(etpPath, s.ExternalTrafficPolicy,
			[]corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}))
	}
	if s.HealthCheckNodePort != 0 && !needsHealthCheckNodePort(svc) {
		errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), s.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if p := s.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster && *p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p,
			[]corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}))
	}
	return errs
}

func validateServiceUpdate(_ context.Context, svc, old *corev1.Service) field.ErrorList {
	errs := validateService(svc, &old.ObjectMeta)
	specPath := field.NewPath("spec")
	// The IP stays allocated to the service for its whole life, except
	// when it turns into, or out of, an ExternalName service.
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName &&
		len(old.Spec.ClusterIPs) > 0 && (len(svc.Spec.ClusterIPs) == 0 || svc.Spec.ClusterIPs[0] != old.Spec.ClusterIPs[0]) {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), svc.Spec.ClusterIPs, "may not change once set"))
	}
	if len(old.Spec.IPFamilies) > 0 && len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] != old.Spec.IPFamilies[0] &&
		svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Invalid(specPath.Child("ipFamilies").Index(0), svc.Spec.IPFamilies[0], "may not change once set"))
	}
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			errs = append(errs, validateIP(ing.IP, field.NewPath("status", "loadBalancer", "ingress").Index(i).Child("ip"))...)
		}
	}
	return errs
}
