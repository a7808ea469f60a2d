package main

import (
	"net/netip"
	"strings"
	"testing"
)

func TestKubeProxyRulesPickEndpointsUniformly(t *testing.T) {
	s := benchService{
		name: "bench/svc-0:http",
		vip:  netip.MustParseAddr("10.97.0.1"),
		port: 80,
		endpoints: []netip.AddrPort{
			netip.MustParseAddrPort("10.245.0.1:8080"),
			netip.MustParseAddrPort("10.245.0.2:8080"),
			netip.MustParseAddrPort("10.245.0.3:8080"),
		},
	}
	out := kubeProxyRules([]benchService{s}, netip.MustParsePrefix("10.244.0.0/16"))
	for _, want := range []string{
		"*nat\n",
		"-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
		"-m tcp -p tcp -d 10.97.0.1/32 --dport 80 -j KUBE-SVC-",
		"--probability 0.3333333333",
		"--probability 0.5000000000",
		"-j DNAT --to-destination 10.245.0.3:8080",
		"COMMIT\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rules lack %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "--probability"); n != 2 {
		t.Errorf("%d statistic rules for 3 endpoints, want 2 (the last endpoint takes the rest)", n)
	}
	if strings.Index(out, "KUBE-NODEPORTS\nCOMMIT") < 0 {
		t.Errorf("the nodeports jump must be the last rule of KUBE-SERVICES:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, ":"); ok {
			if chain := strings.Fields(name)[0]; len(chain) > 28 {
				t.Errorf("chain name %s longer than iptables allows", chain)
			}
		}
	}
}
