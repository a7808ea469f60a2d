package envvars

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterService is the API's own service, whose variables every pod
// gets, service links or not.
const masterService = "kubernetes"

// LinkedServices picks the services whose variables a pod in namespace
// gets: those of its namespace when enableServiceLinks, and the
// kubernetes service of the default namespace always. A service of the
// pod's namespace wins over a default one of the same name. Services
// without a cluster IP (headless, or not yet allocated) give none.
func LinkedServices(services []*corev1.Service, namespace string, enableServiceLinks bool) []*corev1.Service {
	byName := map[string]*corev1.Service{}
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		switch {
		case s.Namespace == namespace && enableServiceLinks:
			byName[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && s.Name == masterService:
			if _, taken := byName[s.Name]; !taken {
				byName[s.Name] = s
			}
		}
	}
	out := make([]*corev1.Service, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ServiceVars returns the variables of services as Kubernetes sets them:
// NAME_SERVICE_HOST, NAME_SERVICE_PORT, NAME_SERVICE_PORT_PORTNAME for
// named ports, and the Docker link variables (NAME_PORT,
// NAME_PORT_80_TCP, ..._PROTO, ..._PORT, ..._ADDR).
func ServiceVars(services []*corev1.Service) map[string]string {
	vars := map[string]string{}
	for _, s := range services {
		if len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := varName(s.Name)
		ip := s.Spec.ClusterIP
		vars[prefix+"_SERVICE_HOST"] = ip
		vars[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
		for i, p := range s.Spec.Ports {
			port := strconv.Itoa(int(p.Port))
			if p.Name != "" {
				vars[prefix+"_SERVICE_PORT_"+varName(p.Name)] = port
			}
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP)
			}
			url := fmt.Sprintf("%s://%s", strings.ToLower(proto), net.JoinHostPort(ip, port))
			if i == 0 {
				vars[prefix+"_PORT"] = url
			}
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			vars[pp] = url
			vars[pp+"_PROTO"] = strings.ToLower(proto)
			vars[pp+"_PORT"] = port
			vars[pp+"_ADDR"] = ip
		}
	}
	return vars
}

// varName turns a service or port name into a variable name part.
func varName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
