package core

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// EndpointsStrategy returns the rules of core/v1 endpoints.
func EndpointsStrategy() strategy.Funcs[*corev1.Endpoints] {
	return strategy.Funcs[*corev1.Endpoints]{
		DefaultFunc: func(ep *corev1.Endpoints) {
			for i := range ep.Subsets {
				for j := range ep.Subsets[i].Ports {
					if ep.Subsets[i].Ports[j].Protocol == "" {
						ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
					}
				}
			}
		},
		ValidateFunc: func(_ context.Context, ep *corev1.Endpoints) field.ErrorList { return validateEndpoints(ep, nil) },
		ValidateUpdateFunc: func(_ context.Context, ep, old *corev1.Endpoints) field.ErrorList {
			return validateEndpoints(ep, &old.ObjectMeta)
		},
	}
}

func validateEndpoints(ep *corev1.Endpoints, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&ep.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	subsetsPath := field.NewPath("subsets")
	for i, ss := range ep.Subsets {
		idx := subsetsPath.Index(i)
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(a, idx.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(a, idx.Child("notReadyAddresses").Index(j))...)
		}
		requireName := len(ss.Ports) > 1
		for j, p := range ss.Ports {
			pp := idx.Child("ports").Index(j)
			if p.Name == "" && requireName {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if p.Name != "" {
				errs = append(errs, validateDNS1123Label(p.Name, pp.Child("name"))...)
			}
			errs = append(errs, validatePortNum(p.Port, pp.Child("port"))...)
			errs = append(errs, validateProtocol(p.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

// validateEndpointAddress refuses addresses that would make the proxy send
// service traffic to the node itself or to link-local services.
func validateEndpointAddress(a corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	ipPath := fldPath.Child("ip")
	errs := validateIP(a.IP, ipPath)
	if len(errs) == 0 {
		errs = append(errs, ValidateEndpointIP(a.IP, ipPath)...)
	}
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil && *a.NodeName != "" {
		errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, *a.NodeName, fldPath.Child("nodeName"))...)
	}
	return errs
}

// ValidateEndpointIP refuses endpoint IPs the proxy must never send
// service traffic to: unspecified, loopback and link-local addresses.
func ValidateEndpointIP(ip string, fldPath *field.Path) field.ErrorList {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil
	}
	switch {
	case addr.IsUnspecified():
		return field.ErrorList{field.Invalid(fldPath, ip, "may not be unspecified (0.0.0.0)")}
	case addr.IsLoopback():
		return field.ErrorList{field.Invalid(fldPath, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case addr.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(fldPath, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case addr.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(fldPath, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}
