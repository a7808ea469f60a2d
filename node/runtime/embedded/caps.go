package embedded

import (
	"fmt"
	"slices"
	"strings"

	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// capNames maps capability names, as Kubernetes spells them (without
// the CAP_ prefix), to their numbers in linux/capability.h.
func capNames() map[string]int {
	return map[string]int{
		"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4,
		"KILL": 5, "SETGID": 6, "SETUID": 7, "SETPCAP": 8, "LINUX_IMMUTABLE": 9,
		"NET_BIND_SERVICE": 10, "NET_BROADCAST": 11, "NET_ADMIN": 12, "NET_RAW": 13,
		"IPC_LOCK": 14, "IPC_OWNER": 15, "SYS_MODULE": 16, "SYS_RAWIO": 17,
		"SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_PACCT": 20, "SYS_ADMIN": 21,
		"SYS_BOOT": 22, "SYS_NICE": 23, "SYS_RESOURCE": 24, "SYS_TIME": 25,
		"SYS_TTY_CONFIG": 26, "MKNOD": 27, "LEASE": 28, "AUDIT_WRITE": 29,
		"AUDIT_CONTROL": 30, "SETFCAP": 31, "MAC_OVERRIDE": 32, "MAC_ADMIN": 33,
		"SYSLOG": 34, "WAKE_ALARM": 35, "BLOCK_SUSPEND": 36, "AUDIT_READ": 37,
		"PERFMON": 38, "BPF": 39, "CHECKPOINT_RESTORE": 40,
	}
}

// defaultCaps is the capability set of an unprivileged container: the
// one Docker and containerd grant.
func defaultCaps() []string {
	return []string{
		"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
		"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
	}
}

// containerCaps computes a container's capabilities from the default set
// and the security context's additions and removals ("ALL" allowed).
func containerCaps(sc *runtimeapi.LinuxContainerSecurityContext) ([]int, error) {
	names := capNames()
	all := func() []int {
		var out []int
		last := helper.LastCap()
		for c := 0; c <= last; c++ {
			out = append(out, c)
		}
		return out
	}
	if sc.GetPrivileged() {
		return all(), nil
	}
	set := map[int]bool{}
	for _, n := range defaultCaps() {
		set[names[n]] = true
	}
	parse := func(n string) (int, bool, error) {
		n = strings.TrimPrefix(strings.ToUpper(n), "CAP_")
		if n == "ALL" {
			return 0, true, nil
		}
		c, ok := names[n]
		if !ok {
			return 0, false, fmt.Errorf("embedded: unknown capability %q", n)
		}
		return c, false, nil
	}
	for _, n := range sc.GetCapabilities().GetDropCapabilities() {
		c, isAll, err := parse(n)
		if err != nil {
			return nil, err
		}
		if isAll {
			clear(set)
		} else {
			delete(set, c)
		}
	}
	for _, n := range sc.GetCapabilities().GetAddCapabilities() {
		c, isAll, err := parse(n)
		if err != nil {
			return nil, err
		}
		if isAll {
			for _, c := range all() {
				set[c] = true
			}
		} else {
			set[c] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}
