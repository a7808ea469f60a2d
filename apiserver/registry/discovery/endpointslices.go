// Package discovery holds the rules of discovery.k8s.io/v1 endpoint
// slices, which the agents' proxies program services from.
package discovery

import (
	"context"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// Limits Kubernetes puts on one slice, so that a slice stays small enough
// to send to every node on each change.
const (
	maxEndpoints = 1000
	maxAddresses = 100
	maxPorts     = 20000
)

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// EndpointSliceStrategy returns the rules of endpoint slices. Their
// generation moves with any change but metadata (and with label changes),
// as Kubernetes does, so proxies can tell stale slices apart.
func EndpointSliceStrategy() strategy.Funcs[*discoveryv1.EndpointSlice] {
	return strategy.Funcs[*discoveryv1.EndpointSlice]{
		DefaultFunc: func(s *discoveryv1.EndpointSlice) {
			for i := range s.Ports {
				if s.Ports[i].Name == nil {
					s.Ports[i].Name = ptr.To("")
				}
				if s.Ports[i].Protocol == nil {
					s.Ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
				}
			}
		},
		PrepareForCreateFunc: func(_ context.Context, s *discoveryv1.EndpointSlice) {
			s.Generation = 1
		},
		ValidateFunc: func(_ context.Context, s *discoveryv1.EndpointSlice) field.ErrorList {
			return validateEndpointSlice(s, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, s, old *discoveryv1.EndpointSlice) field.ErrorList {
			errs := validateEndpointSlice(s, &old.ObjectMeta)
			return append(errs, apimachineryvalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))...)
		},
		SpecChangedFunc: func(s, old *discoveryv1.EndpointSlice) bool {
			a, b := *s, *old
			a.ObjectMeta, b.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
			return !apiequality.Semantic.DeepEqual(a, b) || !apiequality.Semantic.DeepEqual(s.Labels, old.Labels)
		},
	}
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&s.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	atPath := field.NewPath("addressType")
	switch {
	case s.AddressType == "":
		errs = append(errs, field.Required(atPath, ""))
	case !sets.New(addressTypes...).Has(s.AddressType):
		errs = append(errs, field.NotSupported(atPath, s.AddressType, addressTypes))
	}
	return append(errs, validatePorts(s.Ports, field.NewPath("ports"))...)
}

func validateEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(endpoints) > maxEndpoints {
		errs = append(errs, field.TooMany(fldPath, len(endpoints), maxEndpoints))
	}
	for i, ep := range endpoints {
		idx := fldPath.Index(i)
		addrPath := idx.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		case len(ep.Addresses) > maxAddresses:
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateAddress(a, addrType, addrPath.Index(j))...)
		}
		if ep.NodeName != nil {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(idx.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(idx.Child("hostname"), *ep.Hostname, msg))
			}
		}
	}
	return errs
}

// validateAddress checks an address against the slice's type; unknown
// types are reported once, on addressType.
func validateAddress(a string, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	switch addrType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		addr, err := netip.ParseAddr(a)
		switch {
		case err != nil || addr.Zone() != "" || (addrType == discoveryv1.AddressTypeIPv4 && !addr.Is4()):
			if addrType == discoveryv1.AddressTypeIPv4 {
				return field.ErrorList{field.Invalid(fldPath, a, "must be a valid IPv4 address")}
			}
			return field.ErrorList{field.Invalid(fldPath, a, "must be a valid IPv6 address")}
		case addrType == discoveryv1.AddressTypeIPv6 && !addr.Is6():
			return field.ErrorList{field.Invalid(fldPath, a, "must be a valid IPv6 address")}
		}
		return core.ValidateEndpointIP(a, fldPath)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(fldPath, a)
	}
	return nil
}

func validatePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ports) > maxPorts {
		errs = append(errs, field.TooMany(fldPath, len(ports), maxPorts))
	}
	names := sets.New[string]()
	for i, p := range ports {
		idx := fldPath.Index(i)
		name := ptr.Deref(p.Name, "")
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(idx.Child("name"), name, msg))
			}
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), name))
		}
		names.Insert(name)
		switch {
		case p.Protocol == nil:
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		case *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP:
			errs = append(errs, field.NotSupported(idx.Child("protocol"), *p.Protocol, []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}))
		}
		if p.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*p.Port)) {
				errs = append(errs, field.Invalid(idx.Child("port"), *p.Port, msg))
			}
		}
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				errs = append(errs, field.Invalid(idx.Child("appProtocol"), *p.AppProtocol, msg))
			}
		}
	}
	return errs
}
