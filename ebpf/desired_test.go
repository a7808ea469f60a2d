package ebpf

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"cairn/ebpf/datapath"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// svcBuilder and sliceBuilder keep the table tests short.
type svcBuilder struct{ s *corev1.Service }

func testSvc(name string, clusterIPs ...string) svcBuilder {
	return svcBuilder{&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: clusterIPs},
	}}
}

func (b svcBuilder) Port(name string, port int32, proto corev1.Protocol) svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: proto})
	return b
}

func (b svcBuilder) Affinity(seconds *int32) svcBuilder {
	b.s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	if seconds != nil {
		b.s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: seconds}}
	}
	return b
}

func (b svcBuilder) Local() svcBuilder {
	b.s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	return b
}

func (b svcBuilder) Type(t corev1.ServiceType) svcBuilder {
	b.s.Spec.Type = t
	return b
}

type sliceBuilder struct{ s *discoveryv1.EndpointSlice }

func testSlice(name string, family discoveryv1.AddressType) sliceBuilder {
	return sliceBuilder{&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name},
		AddressType: family,
	}}
}

func (b sliceBuilder) Port(name string, port int32, proto corev1.Protocol) sliceBuilder {
	b.s.Ports = append(b.s.Ports, discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(proto)})
	return b
}

// EP adds an endpoint; state is "ready", "terminating" (serving and
// terminating), "draining" (terminating, no longer serving) or
// "unready".
func (b sliceBuilder) EP(addr, state string, node ...string) sliceBuilder {
	c := discoveryv1.EndpointConditions{}
	switch state {
	case "ready":
		c.Ready = ptr.To(true)
	case "terminating":
		c = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
	case "draining":
		c = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(true)}
	case "unready":
		c.Ready = ptr.To(false)
	}
	ep := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: c}
	if len(node) > 0 {
		ep.NodeName = ptr.To(node[0])
	}
	b.s.Endpoints = append(b.s.Endpoints, ep)
	return b
}

// format renders services as "ip:port/PROTO -> backends" lines.
func format(svcs []datapath.Service) []string {
	var out []string
	for _, s := range svcs {
		line := fmt.Sprintf("%v -> %v", s.Frontend, s.Backends)
		if s.AffinityTimeout > 0 {
			line += fmt.Sprintf(" affinity=%v", s.AffinityTimeout)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

func TestDesiredServices(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	tests := []struct {
		name   string
		svc    svcBuilder
		slices []sliceBuilder
		want   []string
	}{{
		name:   "ready endpoints",
		svc:    testSvc("web", "10.96.0.10").Port("", 80, tcp),
		slices: []sliceBuilder{testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready").EP("10.0.0.2", "unready")},
		want:   []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080]"},
	}, {
		name: "terminating endpoints only when no ready one remains",
		svc:  testSvc("web", "10.96.0.10").Port("", 80, tcp),
		slices: []sliceBuilder{
			testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "terminating").EP("10.0.0.2", "draining"),
		},
		want: []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080]"},
	}, {
		name: "terminating endpoints ignored while one is ready",
		svc:  testSvc("web", "10.96.0.10").Port("", 80, tcp),
		slices: []sliceBuilder{
			testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "terminating"),
			testSlice("web-2", v4).Port("", 8080, tcp).EP("10.0.0.3", "ready"),
		},
		want: []string{"10.96.0.10:80/TCP -> [10.0.0.3:8080]"},
	}, {
		name: "named port resolved per slice",
		svc:  testSvc("web", "10.96.0.10").Port("http", 80, tcp).Port("dns", 53, udp),
		slices: []sliceBuilder{
			testSlice("web-1", v4).Port("http", 8080, tcp).Port("dns", 5353, udp).EP("10.0.0.1", "ready"),
			testSlice("web-2", v4).Port("http", 9090, tcp).EP("10.0.0.2", "ready"),
		},
		want: []string{
			"10.96.0.10:53/UDP -> [10.0.0.1:5353]",
			"10.96.0.10:80/TCP -> [10.0.0.1:8080 10.0.0.2:9090]",
		},
	}, {
		name:   "no endpoints: programmed empty, so connect is refused",
		svc:    testSvc("web", "10.96.0.10").Port("", 80, tcp),
		slices: nil,
		want:   []string{"10.96.0.10:80/TCP -> []"},
	}, {
		name: "dual stack takes each family from its slices",
		svc:  testSvc("web", "10.96.0.10", "fd00:96::10").Port("", 80, tcp),
		slices: []sliceBuilder{
			testSlice("web-4", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready"),
			testSlice("web-6", v6).Port("", 8080, tcp).EP("fd00::1", "ready"),
		},
		want: []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080]", "[fd00:96::10]:80/TCP -> [[fd00::1]:8080]"},
	}, {
		name:   "headless",
		svc:    testSvc("web", "None").Port("", 80, tcp),
		slices: []sliceBuilder{testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready")},
		want:   nil,
	}, {
		name:   "ExternalName",
		svc:    testSvc("web").Port("", 80, tcp).Type(corev1.ServiceTypeExternalName),
		slices: nil,
		want:   nil,
	}, {
		name:   "SCTP is not balanced",
		svc:    testSvc("web", "10.96.0.10").Port("", 80, corev1.ProtocolSCTP),
		slices: nil,
		want:   nil,
	}, {
		name:   "ClientIP affinity with default timeout",
		svc:    testSvc("web", "10.96.0.10").Port("", 80, tcp).Affinity(nil),
		slices: []sliceBuilder{testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready")},
		want:   []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080] affinity=3h0m0s"},
	}, {
		name:   "ClientIP affinity with timeoutSeconds",
		svc:    testSvc("web", "10.96.0.10").Port("", 80, tcp).Affinity(ptr.To[int32](60)),
		slices: []sliceBuilder{testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready")},
		want:   []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080] affinity=" + (60 * time.Second).String()},
	}, {
		name: "internalTrafficPolicy Local keeps this node's endpoints",
		svc:  testSvc("web", "10.96.0.10").Port("", 80, tcp).Local(),
		slices: []sliceBuilder{
			testSlice("web-1", v4).Port("", 8080, tcp).EP("10.0.0.1", "ready", "node-a").EP("10.0.0.2", "ready", "node-b"),
		},
		want: []string{"10.96.0.10:80/TCP -> [10.0.0.1:8080]"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var slices []*discoveryv1.EndpointSlice
			for _, b := range tt.slices {
				slices = append(slices, b.s)
			}
			got := format(desiredServices(tt.svc.s, slices, "node-a"))
			if !equalStrings(got, tt.want) {
				t.Errorf("got\n  %v\nwant\n  %v", got, tt.want)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}
