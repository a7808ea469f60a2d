package printers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestEndpoints(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"none", nil, "<none>"},
		{"one port", []corev1.EndpointSubset{{Addresses: addrs("10.1.0.4", "10.1.0.5"), Ports: []corev1.EndpointPort{{Port: 8080}}}},
			"10.1.0.4:8080,10.1.0.5:8080"},
		{"headless without ports", []corev1.EndpointSubset{{Addresses: addrs("10.1.0.4")}}, "10.1.0.4"},
		{"IPv6 in brackets", []corev1.EndpointSubset{{Addresses: addrs("fd00::4"), Ports: []corev1.EndpointPort{{Port: 80}}}},
			"[fd00::4]:80"},
		{"more than three", []corev1.EndpointSubset{{Addresses: addrs("10.1.0.4", "10.1.0.5"),
			Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}},
			"10.1.0.4:80,10.1.0.5:80,10.1.0.4:443 + 1 more..."},
		{"subset without addresses", []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: tt.subsets}
			checkCells(t, wideRow(t, ep), []any{"web", tt.want, "60m"})
		})
	}
	checkColumns(t, &corev1.Endpoints{}, []string{"Name", "Endpoints", "Age"}, []string{"Name", "Endpoints", "Age"})
}

func TestEndpointSlice(t *testing.T) {
	tests := []struct {
		name      string
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
		want      []any // PORTS, ENDPOINTS
	}{
		{"empty", nil, nil, []any{"<unset>", "<unset>"}},
		{"numbered, named and all ports",
			[]discoveryv1.EndpointPort{{Port: ptr(int32(80))}, {Name: ptr("http")}, {}},
			[]discoveryv1.Endpoint{{Addresses: []string{"10.1.0.4"}}, {Addresses: []string{"10.1.0.5"}}},
			[]any{"80,http,*", "10.1.0.4,10.1.0.5"}},
		{"more than three of each",
			[]discoveryv1.EndpointPort{{Port: ptr(int32(1))}, {Port: ptr(int32(2))}, {Port: ptr(int32(3))}, {Port: ptr(int32(4))}},
			[]discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1", "10.1.0.2"}}, {Addresses: []string{"10.1.0.3", "10.1.0.4", "10.1.0.5"}}},
			[]any{"1,2,3 + 1 more...", "10.1.0.1,10.1.0.2,10.1.0.3 + 2 more..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-abc"), AddressType: discoveryv1.AddressTypeIPv4,
				Ports: tt.ports, Endpoints: tt.endpoints}
			c := wideRow(t, es)
			checkCells(t, c, append(append([]any{"web-abc", "IPv4"}, tt.want...), "60m"))
		})
	}
	checkColumns(t, &discoveryv1.EndpointSlice{},
		[]string{"Name", "AddressType", "Ports", "Endpoints", "Age"}, []string{"Name", "AddressType", "Ports", "Endpoints", "Age"})
}
