package devcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"cairn/node/network"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// nodeIfName is the node's end of its veth, inside its namespace.
const nodeIfName = "eth0"

// ipForwardPath is the host's IPv4 forwarding switch.
const ipForwardPath = "/proc/sys/net/ipv4/ip_forward"

// setupHostNetwork creates the bridge with the servers' addresses and,
// for each node, a named network namespace joined to the bridge by a
// veth, with the node's address and a default route through the host.
func setupHostNetwork(t Topology) error {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("devcluster: creating bridge %s: %w", BridgeName, err)
	}
	for i := range t.Servers {
		addr, err := netlink.ParseAddr(ServerIP(i) + "/24")
		if err != nil {
			return fmt.Errorf("devcluster: %w", err)
		}
		if err := netlink.AddrAdd(br, addr); err != nil {
			return fmt.Errorf("devcluster: adding %s to %s: %w", addr, BridgeName, err)
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("devcluster: %s up: %w", BridgeName, err)
	}
	for _, n := range t.Nodes {
		if err := setupNodeNetwork(n, br.Attrs().Index); err != nil {
			return err
		}
	}
	return nil
}

// setupNodeNetwork creates the node's namespace and plugs it into the
// bridge.
func setupNodeNetwork(n Node, bridgeIndex int) error {
	if err := network.NewNetNS(n.NetNS()); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	ns, err := netns.GetFromPath(n.NetNS())
	if err != nil {
		return fmt.Errorf("devcluster: opening %s: %w", n.NetNS(), err)
	}
	defer ns.Close()
	veth := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: n.Name, MasterIndex: bridgeIndex},
		PeerName:  nodeIfName, PeerNamespace: netlink.NsFd(int(ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("devcluster: creating veth %s: %w", n.Name, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("devcluster: %s up: %w", n.Name, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("devcluster: netlink in %s: %w", n.NetNS(), err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("devcluster: %s: %w", n.Name, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("devcluster: %s: lo up: %w", n.Name, err)
	}
	eth, err := h.LinkByName(nodeIfName)
	if err != nil {
		return fmt.Errorf("devcluster: %s: %w", n.Name, err)
	}
	addr, err := netlink.ParseAddr(n.IP + "/24")
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if err := h.AddrAdd(eth, addr); err != nil {
		return fmt.Errorf("devcluster: %s: adding %s: %w", n.Name, addr, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("devcluster: %s: %s up: %w", n.Name, nodeIfName, err)
	}
	gw := net.ParseIP(ServerIP(0))
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("devcluster: %s: default route via %s: %w", n.Name, gw, err)
	}
	return nil
}

// removeHostNetwork deletes the nodes' veths and namespaces and the
// bridge, whatever a previous run left of them.
func removeHostNetwork() error {
	var errs []error
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("devcluster: listing links: %w", err)
	}
	for _, l := range links {
		name := l.Attrs().Name
		if name == BridgeName || (strings.HasPrefix(name, NamePrefix) && l.Type() == "veth") {
			if err := netlink.LinkDel(l); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("devcluster: deleting link %s: %w", name, err))
			}
		}
	}
	paths, _ := filepath.Glob(filepath.Join(NetNSDir, NamePrefix+"*"))
	for _, p := range paths {
		if err := network.RemoveNetNS(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// enableIPForward turns on the host's IPv4 forwarding, which the nodes'
// traffic to the outside needs, and returns the previous value when it
// changed it ("" otherwise).
func enableIPForward() (string, error) {
	raw, err := os.ReadFile(ipForwardPath)
	if err != nil {
		return "", fmt.Errorf("devcluster: %w", err)
	}
	was := strings.TrimSpace(string(raw))
	if was == "1" {
		return "", nil
	}
	if err := os.WriteFile(ipForwardPath, []byte("1"), 0o644); err != nil {
		return "", fmt.Errorf("devcluster: enabling IP forwarding: %w", err)
	}
	return was, nil
}

// restoreIPForward puts back what enableIPForward changed.
func restoreIPForward(was string) error {
	if was == "" {
		return nil
	}
	if err := os.WriteFile(ipForwardPath, []byte(was), 0o644); err != nil {
		return fmt.Errorf("devcluster: restoring IP forwarding to %s: %w", was, err)
	}
	return nil
}
