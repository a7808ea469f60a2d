package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/nsthread"
	"cairn/internal/privtest"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

const testClusterCIDR = "10.98.0.0/16"

func requireNetAdmin(t *testing.T) {
	t.Helper()
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	for _, tool := range []string{"iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			privtest.Unavailable(t, "%s is not installed (apt-get install iptables)", tool)
		}
	}
}

// testNS creates a named network namespace with lo up, removed at cleanup.
func testNS(t *testing.T, path string) string {
	t.Helper()
	if err := NewNetNS(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := RemoveNetNS(path); err != nil {
			t.Error(err)
		}
	})
	if err := nsthread.Run(path, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		t.Fatal(err)
	}
	return path
}

// testNode is a simulated node: a namespace with a pod network.
type testNode struct {
	ns  string
	net *Network
}

func newTestNode(t *testing.T, name, podCIDR string) *testNode {
	t.Helper()
	dir := t.TempDir()
	ns := testNS(t, filepath.Join(dir, "netns"))
	n, err := New(Config{NetNS: ns, StateDir: filepath.Join(dir, "state"), PodCIDR: podCIDR,
		ClusterCIDR: testClusterCIDR, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return &testNode{ns: ns, net: n}
}

// routes returns the node's peer routes, closed at cleanup.
func (n *testNode) routes(t *testing.T) *Routes {
	t.Helper()
	r, err := NewRoutes(n.ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// pod creates a sandbox namespace on the node and attaches it.
func (n *testNode) pod(t *testing.T, id string) (string, netip.Addr) {
	t.Helper()
	ns := testNS(t, filepath.Join(t.TempDir(), id))
	addr, err := n.net.Attach(id, ns)
	if err != nil {
		t.Fatal(err)
	}
	return ns, addr
}

// echoServer listens in ns on addr:0 and answers each connection with
// the source address it sees.
func echoServer(t *testing.T, ns string, addr netip.Addr) netip.AddrPort {
	t.Helper()
	var l net.Listener
	if err := nsthread.Run(ns, func() (err error) {
		l, err = net.Listen("tcp4", netip.AddrPortFrom(addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, c.RemoteAddr().(*net.TCPAddr).IP)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// dialFrom connects from ns to target and returns the source address
// the server saw.
func dialFrom(ns string, target netip.AddrPort) (string, error) {
	var seen string
	err := nsthread.Run(ns, func() error {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(context.Background(), "tcp4", target.String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		seen = strings.TrimSpace(line)
		return err
	})
	return seen, err
}

func TestSandboxesOnOneBridgeReachEachOther(t *testing.T) {
	requireNetAdmin(t)
	node := newTestNode(t, "a", "10.98.1.0/24")
	ns1, ip1 := node.pod(t, "sandbox-1")
	ns2, ip2 := node.pod(t, "sandbox-2")
	if ip1 == ip2 || !node.net.PodCIDR().Contains(ip1) || !node.net.PodCIDR().Contains(ip2) {
		t.Fatalf("pod addresses %s and %s, want two distinct addresses in %s", ip1, ip2, node.net.PodCIDR())
	}
	if again, err := node.net.Attach("sandbox-1", ns1); err != nil || again != ip1 {
		t.Errorf("second Attach = %s, %v; want %s again", again, err, ip1)
	}
	srv := echoServer(t, ns2, ip2)
	seen, err := dialFrom(ns1, srv)
	if err != nil {
		t.Fatalf("sandbox-1 cannot reach sandbox-2 at %s: %v", srv, err)
	}
	if seen != ip1.String() {
		t.Errorf("sandbox-2 saw the connection from %s, want %s (no masquerading inside the cluster)", seen, ip1)
	}
	// A pod reaches itself through its own address too.
	self := echoServer(t, ns1, ip1)
	if _, err := dialFrom(ns1, self); err != nil {
		t.Errorf("sandbox-1 cannot reach itself at %s: %v", self, err)
	}
	if !node.net.Ready() {
		t.Error("Ready = false with a podCIDR and a bridge")
	}
	if err := node.net.Detach("sandbox-2"); err != nil {
		t.Fatal(err)
	}
	if err := node.net.Detach("sandbox-2"); err != nil {
		t.Errorf("second Detach: %v", err)
	}
	if _, ok := node.net.Address("sandbox-2"); ok {
		t.Error("sandbox-2 keeps its address after Detach")
	}
	if _, err := dialFrom(ns1, srv); err == nil {
		t.Error("sandbox-2 is still reachable after Detach")
	}
}

// linkNodes joins two node namespaces with a veth pair, the machines'
// shared network, and returns the node addresses on it.
func linkNodes(t *testing.T, a, b *testNode) (netip.Addr, netip.Addr) {
	t.Helper()
	ha, err := handleAt(a.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	hb, err := handleAt(b.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	nsB, err := netns.GetFromPath(b.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nsB.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "uplink"
	if err := ha.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "uplink", PeerNamespace: netlink.NsFd(int(nsB))}); err != nil {
		t.Fatal(err)
	}
	ipA, ipB := netip.MustParseAddr("192.168.240.1"), netip.MustParseAddr("192.168.240.2")
	for _, side := range []struct {
		h  *netlink.Handle
		ip netip.Addr
	}{{ha, ipA}, {hb, ipB}} {
		l, err := side.h.LinkByName("uplink")
		if err != nil {
			t.Fatal(err)
		}
		if err := side.h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(side.ip, 24))}); err != nil {
			t.Fatal(err)
		}
		if err := side.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return ipA, ipB
}

func TestPodsOnTwoNodesReachEachOtherThroughPeerRoutes(t *testing.T) {
	requireNetAdmin(t)
	a := newTestNode(t, "a", "10.98.1.0/24")
	b := newTestNode(t, "b", "10.98.2.0/24")
	nodeA, nodeB := linkNodes(t, a, b)
	nsA, podA := a.pod(t, "pod-a")
	nsB, podB := b.pod(t, "pod-b")
	srv := echoServer(t, nsB, podB)

	if _, err := dialFrom(nsA, srv); err == nil {
		t.Fatal("pod-a reached pod-b before any route to node b's pods")
	}
	routesA, routesB := a.routes(t), b.routes(t)
	peerA := Peer{Name: "a", PodCIDR: a.net.PodCIDR(), InternalIP: nodeA}
	peerB := Peer{Name: "b", PodCIDR: b.net.PodCIDR(), InternalIP: nodeB}
	for i := 0; i < 2; i++ { // twice: Sync is idempotent
		if err := routesA.Sync([]Peer{peerB, {Name: "no-cidr-yet", InternalIP: nodeB}}); err != nil {
			t.Fatal(err)
		}
		if err := routesB.Sync([]Peer{peerA}); err != nil {
			t.Fatal(err)
		}
	}
	checkEgress(t, nsA, podA, nodeA, srv, echoServer(t, b.ns, nodeB))

	if err := routesA.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dialFrom(nsA, srv); err == nil {
		t.Error("pod-a still reaches pod-b after its route was synced away")
	}
}

// checkEgress checks pod-a's traffic (from podA in nsA, on node a at
// nodeA) to pod-b's server podB, which keeps its source, and to node b's
// server outside, whose address is outside the cluster CIDR: masqueraded.
func checkEgress(t *testing.T, nsA string, podA, nodeA netip.Addr, podB, outside netip.AddrPort) {
	t.Helper()
	seen, err := dialFrom(nsA, podB)
	if err != nil {
		t.Fatalf("pod-a cannot reach pod-b at %s through the peer routes: %v", podB, err)
	}
	if seen != podA.String() {
		t.Errorf("pod-b saw pod-a's connection from %s, want %s (pod to pod keeps its source)", seen, podA)
	}
	seen, err = dialFrom(nsA, outside)
	if err != nil {
		t.Fatalf("pod-a cannot reach node b at %s: %v", outside, err)
	}
	if seen != nodeA.String() {
		t.Errorf("node b saw pod-a's connection from %s, want node a's %s (masqueraded egress)", seen, nodeA)
	}
}

func TestTeardownRemovesEverything(t *testing.T) {
	requireNetAdmin(t)
	node := newTestNode(t, "a", "10.98.1.0/24")
	node.pod(t, "sandbox-1")
	node.pod(t, "sandbox-2")
	routes, err := NewRoutes(node.ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer routes.Close()
	if err := routes.Sync([]Peer{{Name: "b", PodCIDR: netip.MustParsePrefix("10.98.2.0/24"), InternalIP: netip.MustParseAddr("10.98.1.7")}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(iptablesSave(t, node.ns), masqChain) {
		t.Fatal("no masquerading chain after setup")
	}
	if err := node.net.Teardown(); err != nil {
		t.Fatal(err)
	}
	if err := node.net.Teardown(); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
	h, err := handleAt(node.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, _ := h.LinkList()
	for _, l := range links {
		if name := l.Attrs().Name; name != "lo" {
			t.Errorf("link %s (%s) left after Teardown", name, l.Type())
		}
	}
	if rs, _ := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL); len(rs) > 0 {
		t.Errorf("routes left after Teardown: %v", rs)
	}
	if rules := iptablesSave(t, node.ns); strings.Contains(rules, "CAIRN") {
		t.Errorf("iptables rules left after Teardown:\n%s", rules)
	}
	if _, err := os.Stat(node.net.ipam.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("address allocations left after Teardown: %v", err)
	}
}

func TestRestartKeepsAddressesAndCollectsOrphans(t *testing.T) {
	requireNetAdmin(t)
	dir := t.TempDir()
	ns := testNS(t, filepath.Join(dir, "netns"))
	cfg := Config{NetNS: ns, StateDir: filepath.Join(dir, "state"), ClusterCIDR: testClusterCIDR}
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.Ready() {
		t.Error("Ready before any podCIDR")
	}
	if _, err := first.Attach("x", testNS(t, filepath.Join(dir, "x"))); err == nil {
		t.Error("Attach succeeded without a podCIDR")
	}
	if err := first.SetPodCIDR("10.98.3.0/24"); err != nil {
		t.Fatal(err)
	}
	kept, _ := first.Attach("kept", testNS(t, filepath.Join(dir, "kept")))
	first.Attach("gone", testNS(t, filepath.Join(dir, "gone")))
	first.Close()

	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if second.PodCIDR().String() != "10.98.3.0/24" || !second.Ready() {
		t.Errorf("after restart podCIDR = %s, ready = %v; want 10.98.3.0/24 restored", second.PodCIDR(), second.Ready())
	}
	if got, ok := second.Address("kept"); !ok || got != kept {
		t.Errorf("after restart kept has %s, %v; want %s", got, ok, kept)
	}
	if err := second.GC(func(id string) bool { return id == "kept" }); err != nil {
		t.Fatal(err)
	}
	if _, ok := second.Address("gone"); ok {
		t.Error("GC kept the address of a sandbox that no longer exists")
	}
	if _, ok := second.Address("kept"); !ok {
		t.Error("GC freed the address of a live sandbox")
	}
}

func iptablesSave(t *testing.T, ns string) string {
	t.Helper()
	var out []byte
	if err := nsthread.Run(ns, func() (err error) {
		out, err = exec.Command("iptables-save").CombinedOutput()
		return err
	}); err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return string(out)
}

// A burst of pods attaches at once: each gets its own address and a
// working link as soon as Attach returns.
func TestConcurrentAttachesGetDistinctWorkingAddresses(t *testing.T) {
	node := newTestNode(t, "burst", "10.98.4.0/24")
	server, serverIP := node.pod(t, "server")
	target := echoServer(t, server, serverIP)
	const pods = 16
	type result struct {
		ns   string
		addr netip.Addr
		err  error
	}
	results := make([]result, pods)
	var wg sync.WaitGroup
	for i := range pods {
		ns := testNS(t, filepath.Join(t.TempDir(), fmt.Sprintf("p%d", i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, err := node.net.Attach(fmt.Sprintf("burst-%d", i), ns)
			results[i] = result{ns, addr, err}
		}()
	}
	wg.Wait()
	seen := map[netip.Addr]bool{serverIP: true}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("attach %d: %v", i, r.err)
		}
		if seen[r.addr] {
			t.Fatalf("address %s handed out twice", r.addr)
		}
		seen[r.addr] = true
		if got, err := dialFrom(r.ns, target); err != nil || got != r.addr.String() {
			t.Errorf("pod %d (%s) reaching the server: saw %q, %v", i, r.addr, got, err)
		}
	}
}

// TestAttachRecoversFromLeftovers attaches over what a failed attempt
// leaves (a node-side veth without its pod end), and after the bridge
// was made again behind the network's back: the single request of the
// fast path fails in both cases, and the slow path must finish the job.
func TestAttachRecoversFromLeftovers(t *testing.T) {
	requireNetAdmin(t)
	node := newTestNode(t, "a", "10.98.1.0/24")
	h, err := handleAt(node.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	stale := netlink.NewLinkAttrs()
	stale.Name = vethName(vethPrefix, "sandbox-1")
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: stale, PeerName: "stale0"}); err != nil {
		t.Fatal(err)
	}
	node.pod(t, "sandbox-1")

	// The bridge is replaced by another under the same name, with
	// another index.
	old, err := h.LinkByName(DefaultBridge)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkDel(old); err != nil {
		t.Fatal(err)
	}
	br := netlink.NewLinkAttrs()
	br.Name, br.Flags = DefaultBridge, net.FlagUp
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: br}); err != nil {
		t.Fatal(err)
	}
	now, err := h.LinkByName(DefaultBridge)
	if err != nil {
		t.Fatal(err)
	}
	ns2, ip2 := node.pod(t, "sandbox-2")
	ns3, _ := node.pod(t, "sandbox-3")
	for _, id := range []string{"sandbox-2", "sandbox-3"} {
		l, err := h.LinkByName(vethName(vethPrefix, id))
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().MasterIndex != now.Attrs().Index {
			t.Errorf("%s's veth has master %d, want the new bridge %d", id, l.Attrs().MasterIndex, now.Attrs().Index)
		}
	}
	target := echoServer(t, ns2, ip2)
	if _, err := dialFrom(ns3, target); err != nil {
		t.Errorf("sandbox-3 → sandbox-2 on the new bridge: %v", err)
	}
}
