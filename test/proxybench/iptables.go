package main

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"strings"
)

// benchService is one Service of the benchmark: a cluster IP and port
// with its endpoints.
type benchService struct {
	name      string // namespace/name:port, as kube-proxy names a service port
	vip       netip.Addr
	port      uint16
	endpoints []netip.AddrPort
}

// kubeProxyRules renders, in iptables-restore format, the nat table that
// kube-proxy's iptables mode programs for ClusterIP services: OUTPUT jumps
// to KUBE-SERVICES, a linear list with one match per service port, which
// jumps to a KUBE-SVC chain that picks an endpoint with statistic-mode
// random rules, whose KUBE-SEP chain DNATs. Traffic from outside
// clusterCIDR is marked for masquerading, as kube-proxy does when it knows
// the cluster CIDR.
func kubeProxyRules(svcs []benchService, clusterCIDR netip.Prefix) string {
	var chains, rules strings.Builder
	chain := func(name string) { fmt.Fprintf(&chains, ":%s - [0:0]\n", name) }
	rule := func(format string, args ...any) { fmt.Fprintf(&rules, format+"\n", args...) }

	chains.WriteString("*nat\n")
	for _, c := range []string{"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"} {
		chain(c)
	}
	rule(`-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`)
	rule(`-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`)
	rule(`-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000`)
	rule(`-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN`)
	rule(`-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000`)
	rule(`-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`)

	for _, s := range svcs {
		svcChain := "KUBE-SVC-" + chainHash(s.name+"tcp")
		chain(svcChain)
		match := fmt.Sprintf("-m tcp -p tcp -d %s/32 --dport %d", s.vip, s.port)
		rule(`-A KUBE-SERVICES -m comment --comment "%s cluster IP" %s -j %s`, s.name, match, svcChain)
		rule(`-A %s -m comment --comment "%s cluster IP" %s ! -s %s -j KUBE-MARK-MASQ`, svcChain, s.name, match, clusterCIDR)
		n := len(s.endpoints)
		for i, ep := range s.endpoints {
			sepChain := "KUBE-SEP-" + chainHash(s.name+"tcp"+ep.String())
			chain(sepChain)
			if i < n-1 {
				rule(`-A %s -m comment --comment "%s -> %s" -m statistic --mode random --probability %0.10f -j %s`,
					svcChain, s.name, ep, 1/float64(n-i), sepChain)
			} else {
				rule(`-A %s -m comment --comment "%s -> %s" -j %s`, svcChain, s.name, ep, sepChain)
			}
			rule(`-A %s -m comment --comment %s -s %s/32 -j KUBE-MARK-MASQ`, sepChain, s.name, ep.Addr())
			rule(`-A %s -m comment --comment %s -m tcp -p tcp -j DNAT --to-destination %s`, sepChain, s.name, ep)
		}
	}
	rule(`-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`)
	return chains.String() + rules.String() + "COMMIT\n"
}

// chainHash names a chain the way kube-proxy does: a hash of the service
// port (and endpoint), short enough for the 28-character chain limit.
func chainHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}
