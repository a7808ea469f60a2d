package network

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// routeProtocol marks the routes Routes owns (the rtm_protocol field,
// unused by the kernel and common routing daemons), so that a restarted
// agent finds and prunes them without any state of its own.
const routeProtocol netlink.RouteProtocol = 202

// Peer is another node of the cluster, as far as routing goes.
type Peer struct {
	// Name is the node's name, for logs.
	Name string
	// PodCIDR is the peer's pod range.
	PodCIDR netip.Prefix
	// InternalIP is the peer's address on the network shared by the
	// nodes; it must be directly reachable from this node.
	InternalIP netip.Addr
}

// Routes keeps one route per peer node: its podCIDR via its InternalIP.
type Routes struct {
	log *slog.Logger

	mu sync.Mutex
	h  *netlink.Handle
}

// NewRoutes opens the routing table of the network namespace at netnsPath
// (empty: the process's own namespace).
func NewRoutes(netnsPath string, log *slog.Logger) (*Routes, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h, err := handleAt(netnsPath)
	if err != nil {
		return nil, err
	}
	return &Routes{log: log, h: h}, nil
}

// Close releases the netlink handle; the routes stay.
func (r *Routes) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h != nil {
		r.h.Close()
		r.h = nil
	}
}

// Sync makes the routes match peers: it adds or corrects a route per peer
// and deletes routes of peers no longer listed. It is idempotent; peers
// without a podCIDR or an address are skipped. An error for one peer does
// not stop the others.
func (r *Routes) Sync(peers []Peer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return errors.New("network: routes closed")
	}
	want := map[netip.Prefix]Peer{}
	for _, p := range peers {
		if !p.PodCIDR.IsValid() || !p.InternalIP.IsValid() || !p.PodCIDR.Addr().Is4() {
			continue
		}
		want[p.PodCIDR.Masked()] = p
	}
	var errs []error
	have, err := r.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("network: listing routes: %w", err)
	}
	current := map[netip.Prefix]netip.Addr{}
	for _, rt := range have {
		dst, gw := routeDst(rt), routeGw(rt)
		if p, ok := want[dst]; ok && p.InternalIP == gw {
			current[dst] = gw
			continue
		}
		if err := r.h.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("network: deleting route to %s: %w", dst, err))
			continue
		}
		r.log.Info("removed route to peer pods", "podCIDR", dst, "via", gw)
	}
	for dst, p := range want {
		if _, ok := current[dst]; ok {
			continue
		}
		rt := &netlink.Route{Dst: ipNet(dst), Gw: p.InternalIP.AsSlice(), Protocol: routeProtocol, Table: unix.RT_TABLE_MAIN}
		if err := r.h.RouteReplace(rt); err != nil {
			errs = append(errs, fmt.Errorf("network: route to %s pods (%s) via %s: %w", p.Name, dst, p.InternalIP, err))
			continue
		}
		r.log.Info("added route to peer pods", "node", p.Name, "podCIDR", dst, "via", p.InternalIP)
	}
	return errors.Join(errs...)
}

// Teardown deletes every route Routes owns.
func (r *Routes) Teardown() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return errors.New("network: routes closed")
	}
	return deleteRoutes(r.h, r.log)
}

func deleteRoutes(h *netlink.Handle, log *slog.Logger) error {
	have, err := h.RouteListFiltered(nl.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("network: listing routes: %w", err)
	}
	var errs []error
	for _, rt := range have {
		if err := h.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("network: deleting route to %s: %w", routeDst(rt), err))
		} else if log != nil {
			log.Info("removed route to peer pods", "podCIDR", routeDst(rt))
		}
	}
	return errors.Join(errs...)
}

func routeDst(rt netlink.Route) netip.Prefix {
	if rt.Dst == nil {
		return netip.Prefix{}
	}
	addr, _ := netip.AddrFromSlice(rt.Dst.IP)
	ones, _ := rt.Dst.Mask.Size()
	return netip.PrefixFrom(addr.Unmap(), ones)
}

func routeGw(rt netlink.Route) netip.Addr {
	addr, _ := netip.AddrFromSlice(rt.Gw)
	return addr.Unmap()
}
