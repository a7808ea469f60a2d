package network

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestEgressMasqueradesOnlyOutsideTheCluster checks the rules for pods
// that something else attaches, as containerd's CNI bridge does: to a
// peer node's pods they keep their source address, to anything outside
// the cluster range they are masqueraded, as Network's own pods are.
func TestEgressMasqueradesOnlyOutsideTheCluster(t *testing.T) {
	requireNetAdmin(t)
	a := &testNode{ns: testNS(t, filepath.Join(t.TempDir(), "netns"))}
	b := newTestNode(t, "b", "10.98.2.0/24")
	nodeA, nodeB := linkNodes(t, a, b)
	podCIDR := netip.MustParsePrefix("10.98.1.0/24")
	nsA, podA := vethPod(t, a.ns, podCIDR)
	nsB, podB := b.pod(t, "pod-b")

	routesA, routesB := a.routes(t), b.routes(t)
	if err := routesA.Sync([]Peer{{Name: "b", PodCIDR: b.net.PodCIDR(), InternalIP: nodeB}}); err != nil {
		t.Fatal(err)
	}
	if err := routesB.Sync([]Peer{{Name: "a", PodCIDR: podCIDR, InternalIP: nodeA}}); err != nil {
		t.Fatal(err)
	}

	if _, err := NewEgress(a.ns, "fd00::/64"); err == nil {
		t.Error("NewEgress accepted an IPv6 cluster CIDR")
	}
	e, err := NewEgress(a.ns, testClusterCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetPodCIDR("10.98.1.0/33"); err == nil {
		t.Error("SetPodCIDR accepted a malformed pod CIDR")
	}
	for range 2 { // idempotent
		if err := e.SetPodCIDR(podCIDR.String()); err != nil {
			t.Fatal(err)
		}
	}

	checkEgress(t, nsA, podA, nodeA, echoServer(t, nsB, podB), echoServer(t, b.ns, nodeB))

	for range 2 {
		if err := e.Teardown(); err != nil {
			t.Fatal(err)
		}
	}
	if rules := iptablesSave(t, a.ns); strings.Contains(rules, "CAIRN") {
		t.Errorf("iptables rules left after Teardown:\n%s", rules)
	}
}

// vethPod makes a pod namespace joined to the node in ns by a plain
// veth pair, with the node's side holding the first address of
// podCIDR and the pod's the second, as a CNI plugin might.
func vethPod(t *testing.T, ns string, podCIDR netip.Prefix) (string, netip.Addr) {
	t.Helper()
	podNS := testNS(t, filepath.Join(t.TempDir(), "pod"))
	gw := podCIDR.Addr().Next()
	pod := gw.Next()
	h, err := handleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hp, err := handleAt(podNS)
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Close()
	target, err := netns.GetFromPath(podNS)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "podveth"
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(target))}); err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		h    *netlink.Handle
		name string
		ip   netip.Addr
	}{{h, "podveth", gw}, {hp, "eth0", pod}} {
		l, err := side.h.LinkByName(side.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := side.h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(side.ip, podCIDR.Bits()))}); err != nil {
			t.Fatal(err)
		}
		if err := side.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := hp.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}, Gw: gw.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	return podNS, pod
}

// TestDropCNIMasqueradeRemovesTheBridgePluginsRules checks the cleanup
// of the CNI bridge plugin's per-pod masquerading, made before the
// agent's rules took over: the rules of the named network go, with
// their chains; another network's rules and the agent's stay.
func TestDropCNIMasqueradeRemovesTheBridgePluginsRules(t *testing.T) {
	requireNetAdmin(t)
	a := &testNode{ns: testNS(t, filepath.Join(t.TempDir(), "netns"))}
	e, err := NewEgress(a.ns, testClusterCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetPodCIDR("10.98.1.0/24"); err != nil {
		t.Fatal(err)
	}
	// As the bridge plugin makes them (ipMasq): a chain per container,
	// reached from POSTROUTING by the pod's address.
	var script strings.Builder
	script.WriteString("*nat\n")
	for i, pod := range []struct{ network, chain string }{
		{"cairn", "CNI-0a1b2c3d4e5f60718293a4b5"},
		{"cairn", "CNI-ffeeddccbbaa998877665544"},
		{"other", "CNI-00112233445566778899aabb"},
	} {
		comment := fmt.Sprintf(`"name: \"%s\" id: \"c%d\""`, pod.network, i)
		fmt.Fprintf(&script, ":%s - [0:0]\n", pod.chain)
		fmt.Fprintf(&script, "-A %s -d 10.98.1.0/24 -m comment --comment %s -j ACCEPT\n", pod.chain, comment)
		fmt.Fprintf(&script, "-A %s ! -d 224.0.0.0/4 -m comment --comment %s -j MASQUERADE\n", pod.chain, comment)
		fmt.Fprintf(&script, "-A POSTROUTING -s 10.98.1.%d/32 -m comment --comment %s -j %s\n", i+2, comment, pod.chain)
	}
	script.WriteString("COMMIT\n")
	if err := e.rules.runIn([]byte(script.String()), "iptables-restore", "-w", "5", "--noflush"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds nothing to do
		if err := e.DropCNIMasquerade("cairn"); err != nil {
			t.Fatal(err)
		}
	}
	nat := iptablesSave(t, a.ns)
	for _, gone := range []string{"CNI-0a1b2c3d4e5f60718293a4b5", "CNI-ffeeddccbbaa998877665544", `name: \"cairn\"`} {
		if strings.Contains(nat, gone) {
			t.Errorf("%s left in:\n%s", gone, nat)
		}
	}
	for _, kept := range []string{"-A POSTROUTING -s 10.98.1.4/32", ":CNI-00112233445566778899aabb", "-A CAIRN-POSTROUTING -s 10.98.1.0/24"} {
		if !strings.Contains(nat, kept) {
			t.Errorf("%s removed from:\n%s", kept, nat)
		}
	}
}

// TestEgressSaysWhatToInstallWithoutIptables checks the error of a node
// without the iptables tools: it names the package to install.
func TestEgressSaysWhatToInstallWithoutIptables(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	e, err := NewEgress("", testClusterCIDR)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"the rules":         func() error { return e.rules.ensure(netip.MustParsePrefix("10.98.1.0/24")) },
		"DropCNIMasquerade": func() error { return e.DropCNIMasquerade("cairn") },
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), "apt-get install iptables") {
			t.Errorf("%s without iptables: %v, want an error that says to install it", name, err)
		}
	}
}
