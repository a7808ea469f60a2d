package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestForbiddenSysctl(t *testing.T) {
	pod := func(hostNet, hostIPC bool, names ...string) *corev1.Pod {
		p := testPod("p").Container("a").Build()
		p.Spec.HostNetwork, p.Spec.HostIPC = hostNet, hostIPC
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		allowed []string
		want    string
	}{
		{"no sysctls", testPod("p").Container("a").Build(), nil, ""},
		{"safe ones", pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.tcp_keepalive_time"), nil, ""},
		{"an unsafe one", pod(false, false, "net.ipv4.ip_local_port_range", "kernel.msgmax"), nil, `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"allowed by name", pod(false, false, "net.core.somaxconn"), []string{"net.core.somaxconn"}, ""},
		{"allowed by prefix", pod(false, false, "kernel.msgmax"), []string{"kernel.msg*"}, ""},
		{"a prefix is not a name", pod(false, false, "kernel.msgmax"), []string{"kernel.msg"}, `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"net with the host's network", pod(true, false, "net.ipv4.tcp_syncookies"), nil, `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		{"ipc with the host's ipc", pod(false, true, "kernel.shm_rmid_forced"), nil, `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled`},
		{"ipc with the host's network", pod(true, false, "kernel.shm_rmid_forced"), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := forbiddenSysctl(tt.pod, tt.allowed)
			if got != tt.want || bad != (tt.want != "") {
				t.Errorf("forbiddenSysctl = %q, %v; want %q", got, bad, tt.want)
			}
		})
	}
}

func TestValidateSysctlPatterns(t *testing.T) {
	for _, ok := range [][]string{nil, {"net.*"}, {"kernel.msg*", "kernel.sem", "fs.mqueue.*", "net.core.somaxconn"}} {
		if err := ValidateSysctlPatterns(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"*"}, {"kernel.*"}, {"vm.swappiness"}, {"net.*.x"}, {""}} {
		if err := ValidateSysctlPatterns(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
