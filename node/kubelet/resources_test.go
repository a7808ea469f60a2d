package kubelet

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func limits(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestContainerResources(t *testing.T) {
	const gi = 1 << 30
	tests := []struct {
		name               string
		req, lim           corev1.ResourceList
		wantQoS            corev1.PodQOSClass
		shares, quota, mem int64
		oom                int64
	}{
		{name: "best effort", wantQoS: corev1.PodQOSBestEffort, shares: 2, oom: 1000},
		{name: "guaranteed", req: limits("cpu", "500m", "memory", "64Mi"), lim: limits("cpu", "500m", "memory", "64Mi"),
			wantQoS: corev1.PodQOSGuaranteed, shares: 512, quota: 50000, mem: 64 << 20, oom: -997},
		{name: "burstable by request", req: limits("cpu", "250m", "memory", "1Gi"),
			wantQoS: corev1.PodQOSBurstable, shares: 256, oom: 1000 - 1000*gi/(4*gi)},
		{name: "burstable with a limit only on memory", lim: limits("memory", "128Mi"),
			wantQoS: corev1.PodQOSBurstable, shares: 2, mem: 128 << 20, oom: 999},
		{name: "tiny cpu limit keeps the least quota", req: limits("cpu", "1m"), lim: limits("cpu", "1m", "memory", "8Mi"),
			wantQoS: corev1.PodQOSGuaranteed, shares: 2, quota: 1000, mem: 8 << 20, oom: -997},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p").Container("a").Build()
			c := &pod.Spec.Containers[0]
			c.Resources = corev1.ResourceRequirements{Requests: tt.req, Limits: tt.lim}
			if got := qosClass(pod); got != tt.wantQoS {
				t.Fatalf("QoS %s, want %s", got, tt.wantQoS)
			}
			r := containerResources(pod, c, 4*gi)
			if r.CpuShares != tt.shares || r.CpuQuota != tt.quota || r.MemoryLimitInBytes != tt.mem || r.OomScoreAdj != tt.oom {
				t.Errorf("got shares %d quota %d mem %d oom %d", r.CpuShares, r.CpuQuota, r.MemoryLimitInBytes, r.OomScoreAdj)
			}
			if tt.quota > 0 && r.CpuPeriod != cpuPeriod {
				t.Errorf("period %d", r.CpuPeriod)
			}
		})
	}
}

func TestHostsFile(t *testing.T) {
	pod := testPod("web").Build()
	pod.Spec.Hostname, pod.Spec.Subdomain = "w0", "svc"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"db", "db.local"}}}
	got := string(hostsFile(pod, []string{"10.244.1.7"}, "cluster.local"))
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "10.244.1.7\tw0.svc.ns.svc.cluster.local\tw0\n", "10.0.0.9\tdb\tdb.local\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, got)
		}
	}
}

func TestSubPath(t *testing.T) {
	vol := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(vol, "escape"))
	tests := []struct {
		sub     string
		wantErr bool
	}{
		{"data", false},
		{"a/b/c", false},
		{"../x", true},
		{"/etc", true},
		{"escape", true},
	}
	for _, tt := range tests {
		t.Run(tt.sub, func(t *testing.T) {
			p, err := subPath(vol, tt.sub)
			if (err != nil) != tt.wantErr {
				t.Fatalf("subPath(%q) = %q, %v", tt.sub, p, err)
			}
			if err == nil {
				if info, err := os.Stat(p); err != nil || !info.IsDir() {
					t.Errorf("subPath not created: %v", err)
				}
			}
		})
	}
}

func TestDNSConfig(t *testing.T) {
	k := &Kubelet{cfg: Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}}
	tests := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		custom      *corev1.PodDNSConfig
		wantNil     bool
		wantServers []string
		wantSearch  string
	}{
		{name: "cluster first", policy: corev1.DNSClusterFirst, wantServers: []string{"10.96.0.10"}, wantSearch: "ns.svc.cluster.local"},
		{name: "default is the host's", policy: corev1.DNSDefault, wantNil: true},
		{name: "host network falls back to the host's", policy: corev1.DNSClusterFirst, hostNetwork: true, wantNil: true},
		{name: "none takes the pod's", policy: corev1.DNSNone, custom: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"x"}},
			wantServers: []string{"1.1.1.1"}, wantSearch: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p").Build()
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tt.policy, tt.hostNetwork, tt.custom
			got := k.dnsConfig(pod)
			if tt.wantNil {
				if got != nil {
					t.Errorf("got %v, want the host's", got)
				}
				return
			}
			if got == nil || strings.Join(got.Servers, ",") != strings.Join(tt.wantServers, ",") || got.Searches[0] != tt.wantSearch {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestDNSConfigUsesTheNodesServerWithoutClusterDNS(t *testing.T) {
	serving := false
	k := &Kubelet{cfg: Config{ClusterDomain: "cluster.local",
		NodeDNS: func() (netip.Addr, bool) { return netip.MustParseAddr("10.244.0.1"), serving }}}
	pod := testPod("p").Build()
	if got := k.dnsConfig(pod); got != nil {
		t.Errorf("before the node's server serves: %v, want the host's", got)
	}
	serving = true
	got := k.dnsConfig(pod)
	if got == nil || strings.Join(got.Servers, ",") != "10.244.0.1" || strings.Join(got.Searches, " ") != "ns.svc.cluster.local svc.cluster.local cluster.local" {
		t.Errorf("with the node's server: %v", got)
	}
	k.cfg.ClusterDNS = []string{"10.96.0.10"}
	if got := k.dnsConfig(pod); got == nil || strings.Join(got.Servers, ",") != "10.96.0.10" {
		t.Errorf("--cluster-dns comes first: %v", got)
	}
}

func TestPodCgroupFollowsQoS(t *testing.T) {
	k := &Kubelet{cfg: Config{CgroupRoot: "/cairn/n1"}}
	pod := testPod("p").Container("a").Build()
	pod.UID = "u1"
	if got := k.podCgroup(pod); got != "/cairn/n1/kubepods/besteffort/podu1" {
		t.Errorf("best effort: %s", got)
	}
	pod.Status.QOSClass = corev1.PodQOSGuaranteed
	if got := k.podCgroup(pod); got != "/cairn/n1/kubepods/podu1" {
		t.Errorf("guaranteed: %s", got)
	}
}
