package printers

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIngress(t *testing.T) {
	rules := func(hosts ...string) []networkingv1.IngressRule {
		var out []networkingv1.IngressRule
		for _, h := range hosts {
			out = append(out, networkingv1.IngressRule{Host: h})
		}
		return out
	}
	tests := []struct {
		name string
		ing  networkingv1.Ingress
		want []any // CLASS, HOSTS, ADDRESS, PORTS
	}{
		{"catch-all", networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: rules("")}},
			[]any{"<none>", "*", "", "80"}},
		{"hosts, class, TLS and an address", networkingv1.Ingress{
			Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"), Rules: rules("a.example", "", "b.example"),
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example"}}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
				Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.8"}}}}},
			[]any{"nginx", "a.example,b.example", "203.0.113.8", "80, 443"}},
		{"more hosts than shown", networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: rules("a", "b", "c", "d", "e")}},
			[]any{"<none>", "a,b,c + 2 more...", "", "80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ing := tt.ing
			ing.ObjectMeta = objMeta("web")
			checkCells(t, wideRow(t, &ing)[1:5], tt.want)
		})
	}
	checkColumns(t, &networkingv1.Ingress{},
		[]string{"Name", "Class", "Hosts", "Address", "Ports", "Age"}, []string{"Name", "Class", "Hosts", "Address", "Ports", "Age"})
}

func TestIngressClassAndNetworkPolicy(t *testing.T) {
	ic := &networkingv1.IngressClass{ObjectMeta: objMeta("nginx"), Spec: networkingv1.IngressClassSpec{
		Controller: "k8s.io/ingress-nginx",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr("k8s.example.com"), Kind: "IngressParameters", Name: "p"},
	}}
	checkCells(t, wideRow(t, ic), []any{"nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/p", "60m"})
	ic.Spec.Parameters = nil
	checkCells(t, wideRow(t, ic), []any{"nginx", "k8s.io/ingress-nginx", "<none>", "60m"})

	np := &networkingv1.NetworkPolicy{ObjectMeta: objMeta("deny")}
	checkColumns(t, np, []string{"Name", "Pod-Selector", "Age"}, []string{"Name", "Pod-Selector", "Age"})
	checkCells(t, wideRow(t, np), []any{"deny", "<none>", "60m"})
	np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	checkCells(t, wideRow(t, np), []any{"deny", "app=db", "60m"})
}
