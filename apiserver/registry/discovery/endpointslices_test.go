package discovery

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func slice(addrType discoveryv1.AddressType, addrs ...string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "d", ResourceVersion: "1", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: addrType,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: addrs}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
	}
}

func TestEndpointSlice(t *testing.T) {
	ctx := context.Background()
	s := EndpointSliceStrategy()
	ok := slice(discoveryv1.AddressTypeIPv4, "10.244.1.7")
	s.Default(ok)
	s.PrepareForCreate(ctx, ok)
	if errs := s.Validate(ctx, ok); len(errs) > 0 {
		t.Fatal(errs)
	}
	if *ok.Ports[0].Protocol != corev1.ProtocolTCP || *ok.Ports[0].Name != "" || ok.Generation != 1 {
		t.Errorf("defaults = %+v", ok)
	}
	tests := []struct {
		name  string
		s     *discoveryv1.EndpointSlice
		field string
		typ   field.ErrorType
	}{
		{"IPv6 in an IPv4 slice", slice(discoveryv1.AddressTypeIPv4, "fd00::1"), "endpoints[0].addresses[0]", field.ErrorTypeInvalid},
		{"loopback", slice(discoveryv1.AddressTypeIPv4, "127.0.0.1"), "endpoints[0].addresses[0]", field.ErrorTypeInvalid},
		{"no address", slice(discoveryv1.AddressTypeIPv4), "endpoints[0].addresses", field.ErrorTypeRequired},
		{"bad type", slice("IPv5", "10.0.0.1"), "addressType", field.ErrorTypeNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Default(tt.s)
			errs := s.Validate(ctx, tt.s)
			if len(errs) != 1 || errs[0].Field != tt.field || errs[0].Type != tt.typ {
				t.Errorf("got %v, want %s %s", errs, tt.field, tt.typ)
			}
		})
	}
	n := ok.DeepCopy()
	n.AddressType = discoveryv1.AddressTypeFQDN
	n.Endpoints[0].Addresses = []string{"web.example.com"}
	if errs := s.ValidateUpdate(ctx, n, ok); len(errs) != 1 || errs[0].Field != "addressType" {
		t.Errorf("address type change: %v", errs)
	}
	if !s.SpecChanged(n, ok) || s.SpecChanged(ok.DeepCopy(), ok) {
		t.Error("SpecChanged wrong")
	}
	relabeled := ok.DeepCopy()
	relabeled.Labels["x"] = "y"
	if !s.SpecChanged(relabeled, ok) {
		t.Error("a label change must bump an endpoint slice's generation")
	}
}
