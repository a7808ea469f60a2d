package printers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// loadBalancerWidth is how many characters of load balancer addresses
// kubectl shows outside -o wide.
const loadBalancerWidth = 16

func serviceColumns() []metav1.TableColumnDefinition {
	spec := corev1.ServiceSpec{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Type", typeString, spec["type"]),
		column("Cluster-IP", typeString, spec["clusterIP"]),
		column("External-IP", typeString, spec["externalIPs"]),
		column("Port(s)", typeString, spec["ports"]),
		ageColumn(),
		wideColumn("Selector", typeString, spec["selector"]),
	)
}

func serviceRow(svc *corev1.Service, o options) metav1.TableRow {
	svcType := svc.Spec.Type
	if svcType == "" {
		// What the API defaults an unset type to.
		svcType = corev1.ServiceTypeClusterIP
	}
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return cells(
		svc.Name,
		string(svcType),
		orNone(clusterIP),
		serviceExternalIP(svc, svcType, o.wide),
		orNone(servicePorts(svc.Spec.Ports)),
		o.age(svc),
		labels.FormatLabels(svc.Spec.Selector),
	)
}

// serviceExternalIP is what EXTERNAL-IP shows for each service type; a
// load balancer without an address yet is <pending>.
func serviceExternalIP(svc *corev1.Service, t corev1.ServiceType, wide bool) string {
	switch t {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		var addrs []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			addrs = append(addrs, ingressAddress(in.IP, in.Hostname))
		}
		lb := loadBalancerAddresses(addrs, wide)
		all := svc.Spec.ExternalIPs
		if lb != "" {
			all = append(strings.Split(lb, ","), all...)
		}
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	default:
		return "<unknown>"
	}
}

// ingressAddress is a load balancer ingress point's IP, else its hostname.
func ingressAddress(ip, hostname string) string {
	if ip != "" {
		return ip
	}
	return hostname
}

// loadBalancerAddresses joins load balancer addresses, sorted and unique,
// cut to loadBalancerWidth characters outside -o wide.
func loadBalancerAddresses(addrs []string, wide bool) string {
	s := strings.Join(sortedUnique(addrs), ",")
	if !wide && len(s) > loadBalancerWidth {
		s = s[:loadBalancerWidth-3] + "..."
	}
	return s
}

// servicePorts shows each port as port/protocol, or port:nodePort/protocol.
func servicePorts(ports []corev1.ServicePort) string {
	out := make([]string, len(ports))
	for i, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP // the API's default
		}
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto)
		} else {
			out[i] = fmt.Sprintf("%d/%s", p.Port, proto)
		}
	}
	return strings.Join(out, ",")
}
