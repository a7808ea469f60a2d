package printers

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Endpoints are deprecated in favour of EndpointSlices but still served,
// and `kubectl get endpoints` still lists them.
func endpointsColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Endpoints", typeString, corev1.Endpoints{}.SwaggerDoc()["subsets"]), ageColumn())
}

func endpointsRow(ep *corev1.Endpoints, o options) metav1.TableRow {
	return cells(ep.Name, endpointsList(ep), o.age(ep))
}

// endpointsList shows the first addresses as ip:port (bare IPs for
// headless services without ports), then how many more there are.
func endpointsList(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return none
	}
	var shown []string
	total := 0
	add := func(s string) {
		total++
		if len(shown) < maxListed {
			shown = append(shown, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return shortList(shown, total)
}

func endpointSliceColumns() []metav1.TableColumnDefinition {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("AddressType", typeString, doc["addressType"]),
		column("Ports", typeString, doc["ports"]),
		column("Endpoints", typeString, doc["endpoints"]),
		ageColumn(),
	)
}

func endpointSliceRow(es *discoveryv1.EndpointSlice, o options) metav1.TableRow {
	var ports []string
	for _, p := range es.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*") // all ports
		}
	}
	var addrs []string
	for _, e := range es.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	return cells(es.Name, string(es.AddressType), firstFew(ports), firstFew(addrs), o.age(es))
}

// firstFew shows the first maxListed entries and how many more there are,
// or <unset> for none.
func firstFew(entries []string) string {
	if len(entries) == 0 {
		return unset
	}
	return shortList(entries[:min(len(entries), maxListed)], len(entries))
}
