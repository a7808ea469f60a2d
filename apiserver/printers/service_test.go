package printers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServiceColumns(t *testing.T) {
	checkColumns(t, &corev1.Service{ObjectMeta: objMeta("web")},
		[]string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"},
		[]string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"})
}

func TestServiceCells(t *testing.T) {
	lb := func(addrs ...corev1.LoadBalancerIngress) corev1.ServiceStatus {
		return corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: addrs}}
	}
	tests := []struct {
		name   string
		spec   corev1.ServiceSpec
		status corev1.ServiceStatus
		wide   bool
		want   []any // TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S)
	}{
		{"cluster IP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.10", "fd00::a"},
			Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 53, Protocol: corev1.ProtocolTCP}}},
			corev1.ServiceStatus{}, true, []any{"ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP"}},
		{"unset type and protocol read as their defaults", corev1.ServiceSpec{ClusterIP: "10.96.0.11", Ports: []corev1.ServicePort{{Port: 80}}},
			corev1.ServiceStatus{}, true, []any{"ClusterIP", "10.96.0.11", "<none>", "80/TCP"}},
		{"headless without ports", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"None"}},
			corev1.ServiceStatus{}, true, []any{"ClusterIP", "None", "<none>", "<none>"}},
		{"node port with external IPs", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.12"},
			ExternalIPs: []string{"198.51.100.1", "198.51.100.2"},
			Ports:       []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
			corev1.ServiceStatus{}, true, []any{"NodePort", "10.96.0.12", "198.51.100.1,198.51.100.2", "80:30080/TCP"}},
		{"load balancer pending", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.13"}},
			corev1.ServiceStatus{}, true, []any{"LoadBalancer", "10.96.0.13", "<pending>", "<none>"}},
		{"load balancer addresses sorted, then external IPs", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			ClusterIPs: []string{"10.96.0.14"}, ExternalIPs: []string{"198.51.100.9"}},
			lb(corev1.LoadBalancerIngress{Hostname: "lb.example.com"}, corev1.LoadBalancerIngress{IP: "203.0.113.5"}), true,
			[]any{"LoadBalancer", "10.96.0.14", "203.0.113.5,lb.example.com,198.51.100.9", "<none>"}},
		{"load balancer addresses cut outside wide", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.15"}},
			lb(corev1.LoadBalancerIngress{IP: "203.0.113.5"}, corev1.LoadBalancerIngress{IP: "203.0.113.6"}), false,
			[]any{"LoadBalancer", "10.96.0.15", "203.0.113.5,2...", "<none>"}},
		{"external name", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			corev1.ServiceStatus{}, true, []any{"ExternalName", "<none>", "db.example.com", "<none>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: objMeta("web"), Spec: tt.spec, Status: tt.status}
			c := render(t, svc, tt.wide).Rows[0].Cells
			checkCells(t, c[1:5], tt.want)
		})
	}
}

func TestServiceSelector(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: objMeta("web"), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
	if got := wideRow(t, svc)[6]; got != "app=web" {
		t.Errorf("SELECTOR = %q, want app=web", got)
	}
	svc.Spec.Selector = nil
	if got := wideRow(t, svc)[6]; got != "<none>" {
		t.Errorf("SELECTOR = %q, want <none>", got)
	}
}
