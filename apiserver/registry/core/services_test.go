package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func testService(name string, f func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	if f != nil {
		f(s)
	}
	return s
}

func createService(s *corev1.Service) field.ErrorList {
	st := ServiceStrategy()
	st.Default(s)
	st.PrepareForCreate(ctx, s)
	return st.Validate(ctx, s)
}

func TestServiceDefaults(t *testing.T) {
	tests := []struct {
		name  string
		svc   *corev1.Service
		check func(t *testing.T, s *corev1.ServiceSpec)
	}{
		{"cluster IP", testService("web", nil), func(t *testing.T, s *corev1.ServiceSpec) {
			p := s.Ports[0]
			if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone ||
				p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) ||
				*s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || s.ExternalTrafficPolicy != "" ||
				*s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(s.IPFamilies) != 1 || s.IPFamilies[0] != corev1.IPv4Protocol {
				t.Errorf("spec = %+v", s)
			}
		}},
		{"node port", testService("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), func(t *testing.T, s *corev1.ServiceSpec) {
			if s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
				t.Errorf("externalTrafficPolicy = %q", s.ExternalTrafficPolicy)
			}
		}},
		{"load balancer", testService("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }), func(t *testing.T, s *corev1.ServiceSpec) {
			if s.AllocateLoadBalancerNodePorts == nil || !*s.AllocateLoadBalancerNodePorts {
				t.Error("allocateLoadBalancerNodePorts not true")
			}
		}},
		{"client IP affinity", testService("web", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }), func(t *testing.T, s *corev1.ServiceSpec) {
			if *s.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
				t.Error("timeout not 10800")
			}
		}},
		{"named target port kept", testService("web", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }), func(t *testing.T, s *corev1.ServiceSpec) {
			if s.Ports[0].TargetPort != intstr.FromString("http") {
				t.Error("targetPort overwritten")
			}
		}},
		{"requested IP mirrored", testService("web", func(s *corev1.Service) { s.Spec.ClusterIP = "fd00::10" }), func(t *testing.T, s *corev1.ServiceSpec) {
			if len(s.ClusterIPs) != 1 || s.ClusterIPs[0] != "fd00::10" || s.IPFamilies[0] != corev1.IPv6Protocol {
				t.Errorf("clusterIPs %v families %v", s.ClusterIPs, s.IPFamilies)
			}
		}},
		{"headless without selector", testService("web", func(s *corev1.Service) { s.Spec.ClusterIP = "None"; s.Spec.Selector = nil }), func(t *testing.T, s *corev1.ServiceSpec) {
			if *s.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack {
				t.Errorf("policy = %s", *s.IPFamilyPolicy)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := createService(tt.svc); len(errs) > 0 {
				t.Fatalf("valid service refused: %v", errs)
			}
			tt.check(t, &tt.svc.Spec)
		})
	}
}

func TestServiceValidation(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []wantErr
	}{
		{"no ports", testService("web", func(s *corev1.Service) { s.Spec.Ports = nil }), []wantErr{{"spec.ports", field.ErrorTypeRequired}}},
		{"headless needs no ports", testService("web", func(s *corev1.Service) { s.Spec.Ports = nil; s.Spec.ClusterIP = "None" }), nil},
		{"name must be a DNS-1035 label", testService("1web", nil), []wantErr{{"metadata.name", field.ErrorTypeInvalid}}},
		{"port zero", testService("web", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }), []wantErr{
			{"spec.ports[0].port", field.ErrorTypeInvalid}, {"spec.ports[0].targetPort", field.ErrorTypeInvalid}}},
		{"unnamed ports", testService("web", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 443}}
		}), []wantErr{{"spec.ports[0].name", field.ErrorTypeRequired}, {"spec.ports[1].name", field.ErrorTypeRequired}}},
		{"duplicate port", testService("web", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
		}), []wantErr{{"spec.ports[1]", field.ErrorTypeDuplicate}}},
		{"bad protocol", testService("web", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }), []wantErr{{"spec.ports[0].protocol", field.ErrorTypeNotSupported}}},
		{"node port on cluster IP", testService("web", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30000 }), []wantErr{{"spec.ports[0].nodePort", field.ErrorTypeForbidden}}},
		{"duplicate node port", testService("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, NodePort: 30000}, {Name: "b", Port: 81, NodePort: 30000}}
		}), []wantErr{{"spec.ports[1].nodePort", field.ErrorTypeDuplicate}}},
		{"one node port for TCP and UDP", testService("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 53, NodePort: 30053}, {Name: "b", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053}}
		}), nil},
		{"health check node port without a local load balancer", testService("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.HealthCheckNodePort = 30100
		}), []wantErr{{"spec.healthCheckNodePort", field.ErrorTypeInvalid}}},
		{"bad type", testService("web", func(s *corev1.Service) { s.Spec.Type = "Internal" }), []wantErr{{"spec.type", field.ErrorTypeNotSupported}}},
		{"bad cluster IP", testService("web", func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.300" }), []wantErr{{"spec.clusterIPs[0]", field.ErrorTypeInvalid}}},
		{"external name needs a name", testService("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }), []wantErr{{"spec.externalName", field.ErrorTypeRequired}}},
		{"bad selector", testService("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"a/b/c": "x"} }), []wantErr{{"spec.selector", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, createService(tt.svc), tt.want...)
		})
	}
}

func TestServiceClusterIPStaysOnceAllocated(t *testing.T) {
	st := ServiceStrategy()
	old := testService("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	createService(old)
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	old.Spec.Ports[0].NodePort = 30080
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}

	t.Run("replace without allocated values keeps them", func(t *testing.T) {
		s := testService("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
		st.Default(s)
		st.PrepareForUpdate(ctx, s, old)
		if errs := st.ValidateUpdate(ctx, s, old); len(errs) > 0 {
			t.Fatal(errs)
		}
		if s.Spec.ClusterIP != "10.96.0.10" || s.Spec.Ports[0].NodePort != 30080 || len(s.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("spec %+v status %+v", s.Spec, s.Status)
		}
	})
	t.Run("changing the IP is refused", func(t *testing.T) {
		s := old.DeepCopy()
		s.Spec.ClusterIP = "10.96.0.11"
		st.Default(s)
		st.PrepareForUpdate(ctx, s, old)
		checkErrs(t, st.ValidateUpdate(ctx, s, old), wantErr{"spec.clusterIPs[0]", field.ErrorTypeInvalid})
	})
	t.Run("status update keeps spec", func(t *testing.T) {
		s := old.DeepCopy()
		s.Spec.Ports[0].Port = 81
		s.Status.LoadBalancer.Ingress = nil
		st.PrepareStatusForUpdate(ctx, s, old)
		if s.Spec.Ports[0].Port != 80 || len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("status update: %+v", s)
		}
	})
}

// TestServiceTypeChangeDropsWhatTheOldTypeNeeded follows Kubernetes: a
// type change clears the allocated values the new type forbids, unless
// the client changed them, and an update that leaves allocated values out
// keeps them while the type still needs them.
func TestServiceTypeChangeDropsWhatTheOldTypeNeeded(t *testing.T) {
	st := ServiceStrategy()
	stored := func(f func(*corev1.Service)) *corev1.Service {
		old := testService("web", f)
		if errs := createService(old); len(errs) > 0 {
			t.Fatal(errs)
		}
		old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
		for i := range old.Spec.Ports {
			if needsNodePorts(old) {
				old.Spec.Ports[i].NodePort = 30080 + int32(i)
			}
		}
		if needsHealthCheckNodePort(old) {
			old.Spec.HealthCheckNodePort = 30200
		}
		return old
	}
	nodePort := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
	localLB := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	}
	tests := []struct {
		name   string
		old    *corev1.Service
		change func(s *corev1.Service)
		want   []wantErr
		check  func(t *testing.T, s *corev1.Service)
	}{
		{"NodePortToClusterIP", stored(nodePort), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, nil,
			func(t *testing.T, s *corev1.Service) {
				if s.Spec.Ports[0].NodePort != 0 || s.Spec.ExternalTrafficPolicy != "" || s.Spec.ClusterIP != "10.96.0.10" {
					t.Errorf("spec %+v", s.Spec)
				}
			}},
		{"ChangedNodePortIsNotDropped", stored(nodePort), func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.Ports[0].NodePort = 30999
		}, []wantErr{{"spec.ports[0].nodePort", field.ErrorTypeForbidden}}, nil},
		{"LocalLoadBalancerToClusterIP", stored(localLB), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, nil,
			func(t *testing.T, s *corev1.Service) {
				if s.Spec.HealthCheckNodePort != 0 || s.Spec.Ports[0].NodePort != 0 || s.Spec.AllocateLoadBalancerNodePorts != nil ||
					len(s.Status.LoadBalancer.Ingress) != 0 {
					t.Errorf("spec %+v status %+v", s.Spec, s.Status)
				}
			}},
		{"ClusterIPToExternalName", stored(nil), func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
		}, nil, func(t *testing.T, s *corev1.Service) {
			if s.Spec.ClusterIP != "" || s.Spec.ClusterIPs != nil || s.Spec.IPFamilies != nil || s.Spec.IPFamilyPolicy != nil || s.Spec.InternalTrafficPolicy != nil {
				t.Errorf("spec %+v", s.Spec)
			}
		}},
		{"ExternalNameKeepsARequestedIP", stored(nil), func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
		}, []wantErr{{"spec.clusterIPs", field.ErrorTypeForbidden}}, nil},
		{"NodePortKeepsItsPortByName", stored(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].Name = "http"
		}), func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 8080}, {Name: "https", Port: 443}}
		}, nil, func(t *testing.T, s *corev1.Service) {
			if s.Spec.Ports[0].NodePort != 30080 || s.Spec.Ports[1].NodePort != 0 {
				t.Errorf("ports %+v", s.Spec.Ports)
			}
		}},
		{"PortTakenByAnotherIsNotCopied", stored(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].Name = "http"
		}), func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443, NodePort: 30080}}
		}, nil, func(t *testing.T, s *corev1.Service) {
			if s.Spec.Ports[0].NodePort != 0 || s.Spec.Ports[1].NodePort != 30080 {
				t.Errorf("ports %+v", s.Spec.Ports)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.old.DeepCopy()
			tt.change(s)
			st.Default(s)
			st.PrepareForUpdate(ctx, s, tt.old)
			checkErrs(t, st.ValidateUpdate(ctx, s, tt.old), tt.want...)
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}
