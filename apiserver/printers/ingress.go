package printers

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ingressColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Class", typeString, networkingv1.IngressSpec{}.SwaggerDoc()["ingressClassName"]),
		column("Hosts", typeString, "Hosts the ingress rules match."),
		column("Address", typeString, "Addresses of the load balancer serving the ingress."),
		column("Ports", typeString, "Ports the ingress listens on: 80, and 443 with TLS."),
		ageColumn(),
	)
}

func ingressRow(ing *networkingv1.Ingress, o options) metav1.TableRow {
	class := none
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var addrs []string
	for _, in := range ing.Status.LoadBalancer.Ingress {
		addrs = append(addrs, ingressAddress(in.IP, in.Hostname))
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return cells(ing.Name, class, ingressHosts(ing.Spec.Rules), loadBalancerAddresses(addrs, o.wide), ports, o.age(ing))
}

// ingressHosts lists the first hosts named by the rules, "*" when none
// is. As in kubectl, the count of the rest is of rules, not of hosts.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == maxListed {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	if more {
		return fmt.Sprintf("%s + %d more...", strings.Join(hosts, ","), len(rules)-maxListed)
	}
	return strings.Join(hosts, ",")
}

func ingressClassColumns() []metav1.TableColumnDefinition {
	spec := networkingv1.IngressClassSpec{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Controller", typeString, spec["controller"]),
		column("Parameters", typeString, spec["parameters"]),
		ageColumn(),
	)
}

func ingressClassRow(ic *networkingv1.IngressClass, o options) metav1.TableRow {
	params := none
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return cells(ic.Name, ic.Spec.Controller, params, o.age(ic))
}

func networkPolicyColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Pod-Selector", typeString, networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
		ageColumn(),
	)
}

func networkPolicyRow(np *networkingv1.NetworkPolicy, o options) metav1.TableRow {
	return cells(np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), o.age(np))
}
