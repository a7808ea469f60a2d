package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultBridge is the name of the node bridge pods attach to.
const DefaultBridge = "cairn0"

// defaultMTU is the MTU of the bridge and of pod interfaces unless
// configured.
const defaultMTU = 1500

// vethPrefix starts the node-side name of every pod veth, so that
// Teardown can find them.
const vethPrefix = "cv"

// Config configures a Network.
type Config struct {
	// NetNS is the path of the node's network namespace. Empty means the
	// namespace the process runs in, which is what an agent wants; tests
	// pass one per simulated node.
	NetNS string
	// StateDir keeps the address allocations and the podCIDR across
	// restarts (e.g. DATA_DIR/network).
	StateDir string
	// Bridge names the node bridge; DefaultBridge if empty.
	Bridge string
	// PodCIDR is the node's pod range, if known at start; else it comes
	// from SetPodCIDR, or from the state of the previous run.
	PodCIDR string
	// ClusterCIDR is the range of all pods of the cluster: pod traffic to
	// it keeps its source address, and the rest is masqueraded. Empty
	// means only this node's podCIDR is exempt.
	ClusterCIDR string
	// MTU of the bridge and the pod interfaces; 1500 if zero.
	MTU int
	// Logger receives setup and teardown events; nil discards them.
	Logger *slog.Logger
}

// Network is the pod network of one node.
type Network struct {
	cfg   Config
	rules egressRules
	log   *slog.Logger
	ipam  ipam

	// mu guards the fields below: shared by attaches and detaches of
	// sandboxes (see lockedAttach) and by readers, exclusively by what
	// replaces them (SetPodCIDR, Close, GC, Teardown).
	mu sync.RWMutex
	h  *netlink.Handle
	// rt is a route netlink socket in the node's namespace, for the
	// requests netlink.Handle cannot make; brIndex caches the bridge's
	// interface index, 0 if unknown.
	rt      *nl.SocketHandle
	brIndex atomic.Int64
	podCIDR netip.Prefix
}

// New opens the pod network of the node in cfg.NetNS. Once a podCIDR is
// known (from cfg, SetPodCIDR or the previous run) the bridge and rules
// are (re)created, idempotently.
func New(cfg Config) (*Network, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("network: no state directory given")
	}
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.MTU == 0 {
		cfg.MTU = defaultMTU
	}
	cluster, err := parseClusterCIDR(cfg.ClusterCIDR)
	if err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg, rules: egressRules{netns: cfg.NetNS, cluster: cluster},
		log: cfg.Logger, ipam: ipam{dir: filepath.Join(cfg.StateDir, "ipam")}}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	h, err := handleAt(cfg.NetNS)
	if err != nil {
		return nil, err
	}
	rt, err := routeSocketAt(cfg.NetNS)
	if err != nil {
		h.Close()
		return nil, err
	}
	n.h, n.rt = h, rt
	cidr := cfg.PodCIDR
	if cidr == "" {
		if raw, err := os.ReadFile(filepath.Join(cfg.StateDir, "podcidr")); err == nil {
			cidr = strings.TrimSpace(string(raw))
		}
	}
	if cidr != "" {
		if err := n.SetPodCIDR(cidr); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// handleAt opens a netlink handle in the namespace at path, or in the
// caller's for an empty path. It has a route socket only: by default a
// handle opens one per netlink family, and nothing here needs the others.
func handleAt(path string) (*netlink.Handle, error) {
	if path == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("network: netlink: %w", err)
		}
		return h, nil
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("network: opening netns %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("network: netlink in %s: %w", path, err)
	}
	return h, nil
}

// routeSocketAt opens a route netlink socket in the namespace at path,
// or in the caller's for an empty path.
func routeSocketAt(path string) (*nl.SocketHandle, error) {
	target := netns.None()
	if path != "" {
		ns, err := netns.GetFromPath(path)
		if err != nil {
			return nil, fmt.Errorf("network: opening netns %s: %w", path, err)
		}
		defer ns.Close()
		target = ns
	}
	s, err := nl.GetNetlinkSocketAt(target, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("network: netlink in %q: %w", path, err)
	}
	return &nl.SocketHandle{Socket: s}, nil
}

// Close releases the netlink handle; what was set up stays.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.h != nil {
		n.h.Close()
		n.rt.Close()
		n.h, n.rt = nil, nil
	}
}

// PodCIDR returns the node's pod range, invalid until one is set.
func (n *Network) PodCIDR() netip.Prefix {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.podCIDR
}

// Ready reports whether pods can be attached: the podCIDR is known and
// the bridge exists.
func (n *Network) Ready() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if !n.podCIDR.IsValid() || n.h == nil {
		return false
	}
	_, err := n.h.LinkByName(n.cfg.Bridge)
	return err == nil
}

// SetPodCIDR sets the node's pod range and makes the bridge, its
// address, IP forwarding and the masquerading rules match it. It is
// idempotent, and repairs anything removed behind its back.
func (n *Network) SetPodCIDR(cidr string) error {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return fmt.Errorf("network: pod CIDR %q is not an IPv4 prefix of /30 or larger", cidr)
	}
	prefix = prefix.Masked()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.h == nil {
		return errors.New("network: closed")
	}
	if err := n.ensureBridge(prefix); err != nil {
		return err
	}
	if err := enableForwarding(n.cfg.NetNS); err != nil {
		return err
	}
	if err := n.rules.ensure(prefix); err != nil {
		return err
	}
	if err := os.MkdirAll(n.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if err := os.WriteFile(filepath.Join(n.cfg.StateDir, "podcidr"), []byte(prefix.String()), 0o600); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if n.podCIDR != prefix {
		n.log.Info("pod network ready", "bridge", n.cfg.Bridge, "podCIDR", prefix, "gateway", gateway(prefix))
	}
	n.podCIDR = prefix
	return nil
}

// gateway is the bridge's address in prefix: its first address.
func gateway(prefix netip.Prefix) netip.Addr { return prefix.Masked().Addr().Next() }

// ensureBridge creates the bridge if needed and gives it exactly the
// gateway address of prefix.
func (n *Network) ensureBridge(prefix netip.Prefix) error {
	br, err := n.h.LinkByName(n.cfg.Bridge)
	if err != nil {
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MTU = n.cfg.Bridge, n.cfg.MTU
		if err := n.h.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("network: creating bridge %s: %w", n.cfg.Bridge, err)
		}
		if br, err = n.h.LinkByName(n.cfg.Bridge); err != nil {
			return fmt.Errorf("network: bridge %s: %w", n.cfg.Bridge, err)
		}
	}
	if _, ok := br.(*netlink.Bridge); !ok {
		return fmt.Errorf("network: %s exists and is a %s, not a bridge: remove it or choose another bridge name", n.cfg.Bridge, br.Type())
	}
	n.brIndex.Store(int64(br.Attrs().Index))
	want := ipNet(netip.PrefixFrom(gateway(prefix), prefix.Bits()))
	addrs, err := n.h.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	have := false
	for _, a := range addrs {
		if a.IPNet.String() == want.String() {
			have = true
			continue
		}
		// A stale address from an earlier podCIDR would route the old
		// range here.
		if err := n.h.AddrDel(br, &a); err != nil {
			return fmt.Errorf("network: removing %s from %s: %w", a.IPNet, n.cfg.Bridge, err)
		}
	}
	if !have {
		if err := n.h.AddrAdd(br, &netlink.Addr{IPNet: want}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("network: adding %s to %s: %w", want, n.cfg.Bridge, err)
		}
	}
	if err := n.h.LinkSetUp(br); err != nil {
		return fmt.Errorf("network: bringing %s up: %w", n.cfg.Bridge, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// vethName is the node-side name of a sandbox's veth, at most 15 bytes.
func vethName(prefix, sandboxID string) string {
	sum := sha256.Sum256([]byte(sandboxID))
	return prefix + hex.EncodeToString(sum[:])[:12]
}

// Attach gives the sandbox whose network namespace is at netnsPath an
// address from the podCIDR on an eth0 veth into the bridge, with a
// default route through the bridge, and returns the address. Attaching
// an attached sandbox returns its address again.
func (n *Network) Attach(sandboxID, netnsPath string) (netip.Addr, error) {
	addr, host, err := n.lockedAttach(sandboxID, netnsPath)
	if err != nil {
		return netip.Addr{}, err
	}
	if host != "" {
		// Waiting for the carrier takes tens of milliseconds: with its
		// own handle, outside the lock, a burst of pods starting on the
		// node waits for their veths in parallel.
		h, err := handleAt(n.cfg.NetNS)
		if err == nil {
			err = waitOperUp(h, host)
			h.Close()
		}
		if err != nil {
			n.Detach(sandboxID)
			return netip.Addr{}, err
		}
	}
	n.log.Debug("attached sandbox", "sandbox", sandboxID, "ip", addr)
	return addr, nil
}

// lockedAttach allocates the sandbox's address and makes its veth; host
// is the node side's name, to wait for, or "" if it is up already or was
// attached before. Attaches share the lock: in a burst of pod starts on
// a node, each would otherwise wait for all those before it, for many
// times its own few milliseconds of CPU. What they share is safe to use
// at once: the allocator has its own lock, the netlink handle one per
// request, and each attach makes links of its own sandbox's names.
func (n *Network) lockedAttach(sandboxID, netnsPath string) (addr netip.Addr, host string, err error) {
	n.mu.RLock()
	addr, host, err = n.sharedAttach(sandboxID, netnsPath)
	n.mu.RUnlock()
	if err != nil && addr.IsValid() {
		n.Detach(sandboxID)
		return netip.Addr{}, "", err
	}
	return addr, host, err
}

func (n *Network) sharedAttach(sandboxID, netnsPath string) (netip.Addr, string, error) {
	if !n.podCIDR.IsValid() {
		return netip.Addr{}, "", errors.New("network: the node has no pod CIDR yet")
	}
	if n.h == nil {
		return netip.Addr{}, "", errors.New("network: closed")
	}
	addr, err := n.ipam.allocate(n.podCIDR, sandboxID)
	if err != nil {
		return netip.Addr{}, "", err
	}
	host, err := n.attach(sandboxID, netnsPath, addr)
	return addr, host, err
}

func (n *Network) attach(sandboxID, netnsPath string, addr netip.Addr) (host string, err error) {
	podNS, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return "", fmt.Errorf("network: opening netns %s: %w", netnsPath, err)
	}
	defer podNS.Close()
	// Only a route socket: a handle opens one per netlink family.
	pod, err := netlink.NewHandleAt(podNS, unix.NETLINK_ROUTE)
	if err != nil {
		return "", fmt.Errorf("network: netlink in %s: %w", netnsPath, err)
	}
	defer pod.Close()
	host = vethName(vethPrefix, sandboxID)
	// Every netlink call saved is kernel work saved in a burst of pod
	// starts: the veth is made in one request, up and in the bridge,
	// with its pod end already named eth0 in the pod's namespace. Only
	// when that fails are the leftovers of an earlier attempt looked for.
	err = n.addVeth(host, podNS)
	if errors.Is(err, unix.EEXIST) {
		if _, err := pod.LinkByName("eth0"); err == nil {
			return "", nil // attached before a restart, or by an earlier call
		}
		if old, err := n.h.LinkByName(host); err == nil {
			n.h.LinkDel(old) // half made by a failed attempt
		}
		err = n.addVeth(host, podNS)
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENODEV) {
		// The bridge may have been made again since its index was read.
		n.brIndex.Store(0)
		err = n.addVeth(host, podNS)
	}
	if err != nil {
		return "", fmt.Errorf("network: creating veth %s: %w", host, err)
	}
	if err := configurePod(pod, netip.PrefixFrom(addr, n.podCIDR.Bits()), gateway(n.podCIDR)); err != nil {
		return "", err
	}
	veth, err := n.h.LinkByName(host)
	if err != nil {
		return "", fmt.Errorf("network: %w", err)
	}
	// Hairpin lets a pod reach itself through a Service address that
	// the proxy resolves to the pod's own IP.
	if err := n.h.LinkSetHairpin(veth, true); err != nil {
		return "", fmt.Errorf("network: hairpin on %s: %w", host, err)
	}
	if veth.Attrs().OperState == netlink.OperUp {
		return "", nil // nothing to wait for
	}
	return host, nil
}

// addVeth makes the veth host, up and in the bridge, whose peer is eth0
// in the namespace podNS: one request where netlink.Handle makes three
// (the veth, a lookup of its index, its master).
func (n *Network) addVeth(host string, podNS netns.NsHandle) error {
	brIndex := n.brIndex.Load()
	if brIndex == 0 {
		br, err := n.h.LinkByName(n.cfg.Bridge)
		if err != nil {
			return fmt.Errorf("bridge %s: %w", n.cfg.Bridge, err)
		}
		brIndex = int64(br.Attrs().Index)
		n.brIndex.Store(brIndex)
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: n.rt}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(host)))
	req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(n.cfg.MTU))))
	req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(brIndex))))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	peer := info.AddRtAttr(nl.IFLA_INFO_DATA, nil).AddRtAttr(nl.VETH_INFO_PEER, nil)
	// The peer cannot be made up here: the kernel opens it before it
	// is paired (ENOTCONN).
	nl.NewIfInfomsgChild(peer, unix.AF_UNSPEC)
	peer.AddRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0"))
	peer.AddRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(n.cfg.MTU)))
	peer.AddRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(podNS)))
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// linkUpTimeout bounds the wait for a new veth to come up.
const linkUpTimeout = 5 * time.Second

// waitOperUp waits until a link is operationally up. The kernel applies
// carrier changes asynchronously, up to a second late, and the bridge
// drops a port's frames until then: without the wait, a pod's first
// packets would be lost.
func waitOperUp(h *netlink.Handle, name string) error {
	deadline := time.Now().Add(linkUpTimeout)
	for {
		l, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("network: %w", err)
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("network: %s still %s after %s", name, l.Attrs().OperState, linkUpTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// configurePod gives the pod's eth0 its address and a default route via
// the gateway, and brings it and lo up.
func configurePod(pod *netlink.Handle, addr netip.Prefix, gw netip.Addr) error {
	link, err := pod.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("network: pod veth: %w", err)
	}
	if err := pod.AddrAdd(link, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
		return fmt.Errorf("network: adding %s to eth0: %w", addr, err)
	}
	if err := pod.LinkSetUp(link); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	// lo has the same index in every namespace: no need to look it up.
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: loopbackIndex}}
	if err := pod.LinkSetUp(lo); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	route := &netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw.AsSlice(), Dst: nil}
	if err := pod.RouteReplace(route); err != nil {
		return fmt.Errorf("network: default route via %s: %w", gw, err)
	}
	return nil
}

// loopbackIndex is the interface index of lo in every network
// namespace (the kernel's LOOPBACK_IFINDEX).
const loopbackIndex = 1

// Detach removes a sandbox's veth and frees its address. It is
// idempotent, and works after the namespace is gone.
//
// Detaches share the lock with attaches, as attaches do with each
// other: deleting a veth waits tens of milliseconds for the kernel to
// release the device, and a node tearing down a burst of pods would
// otherwise hold the pods starting meanwhile behind each deletion.
func (n *Network) Detach(sandboxID string) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.h != nil {
		if link, err := n.h.LinkByName(vethName(vethPrefix, sandboxID)); err == nil {
			if err := n.h.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
				return fmt.Errorf("network: deleting veth of %s: %w", sandboxID, err)
			}
		}
	}
	return n.ipam.release(sandboxID)
}

// Address returns the address a sandbox holds, if any.
func (n *Network) Address(sandboxID string) (netip.Addr, bool) {
	inUse, err := n.ipam.allocations()
	if err != nil {
		return netip.Addr{}, false
	}
	for addr, owner := range inUse {
		if owner == sandboxID {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

// GC frees the addresses of sandboxes that no longer exist, such as
// those removed while the agent was down.
func (n *Network) GC(exists func(sandboxID string) bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ipam.releaseIf(func(owner string) bool { return !exists(owner) })
}

// Teardown removes everything the network created in the node's
// namespace: pod veths, the bridge, the forwarding and masquerading
// rules, the routes to peers, and the address allocations.
func (n *Network) Teardown() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	if n.h != nil {
		links, err := n.h.LinkList()
		if err != nil {
			errs = append(errs, fmt.Errorf("network: %w", err))
		}
		for _, l := range links {
			name := l.Attrs().Name
			if (strings.HasPrefix(name, vethPrefix) && l.Type() == "veth" && len(name) == len(vethPrefix)+12) || name == n.cfg.Bridge {
				if err := n.h.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
					errs = append(errs, fmt.Errorf("network: deleting %s: %w", name, err))
				}
			}
		}
		errs = append(errs, deleteRoutes(n.h, nil))
	}
	errs = append(errs, n.rules.remove())
	if err := os.RemoveAll(n.ipam.dir); err != nil {
		errs = append(errs, fmt.Errorf("network: %w", err))
	}
	n.ipam.reset()
	if err := os.Remove(filepath.Join(n.cfg.StateDir, "podcidr")); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("network: %w", err))
	}
	n.podCIDR = netip.Prefix{}
	n.log.Info("pod network torn down", "bridge", n.cfg.Bridge)
	return errors.Join(errs...)
}
