package kubelet

import (
	"fmt"
	"slices"
	"strings"

	"cairn/node/runtime"

	corev1 "k8s.io/api/core/v1"
)

// reasonSysctlForbidden is the reason of a pod rejected for its sysctls.
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the sysctls any pod may set, as in Kubernetes: each is
// namespaced, and one pod setting it affects neither the node nor other
// pods. Others need --allowed-unsafe-sysctls.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ping_group_range",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.tcp_wmem",
}

// ValidateSysctlPatterns checks --allowed-unsafe-sysctls: names, or
// prefixes ending in "*", of namespaced sysctls.
func ValidateSysctlPatterns(patterns []string) error {
	for _, p := range patterns {
		name := strings.TrimSuffix(p, "*")
		if name == "" || strings.Contains(name, "*") || !namespacedSysctl(name) {
			return fmt.Errorf("--allowed-unsafe-sysctls %q: want names or prefixes ending in * of namespaced sysctls (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*)", p)
		}
	}
	return nil
}

func namespacedSysctl(name string) bool {
	return strings.HasPrefix(name, "net.") || runtime.IPCSysctl(name)
}

// forbiddenSysctl says why the kubelet must reject pod for its sysctls,
// as Kubernetes' kubelet does: one neither safe nor allowed, or one of a
// namespace the pod shares with the host.
func forbiddenSysctl(pod *corev1.Pod, allowed []string) (string, bool) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return "", false
	}
	for _, s := range sc.Sysctls {
		ok := slices.Contains(safeSysctls, s.Name) || slices.ContainsFunc(allowed, func(p string) bool {
			if prefix, found := strings.CutSuffix(p, "*"); found {
				return strings.HasPrefix(s.Name, prefix)
			}
			return p == s.Name
		})
		switch {
		case !ok:
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", s.Name), true
		case strings.HasPrefix(s.Name, "net.") && pod.Spec.HostNetwork:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host net enabled", s.Name), true
		case runtime.IPCSysctl(s.Name) && pod.Spec.HostIPC:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host ipc enabled", s.Name), true
		}
	}
	return "", false
}
