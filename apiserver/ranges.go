package apiserver

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

// DefaultServiceCIDR is the range service cluster IPs come from when
// Config.ServiceCIDR is empty, Kubernetes' usual 10.96.0.0/12.
const DefaultServiceCIDR = "10.96.0.0/12"

// Node ports come from Kubernetes' default range, 30000-32767.
const (
	nodePortBase = 30000
	nodePortSize = 2768
)

// maxServiceCIDRHostBits bounds the service range at 2^20 addresses
// (a /12 for IPv4, a /108 for IPv6), as Kubernetes does, so a range walk
// stays cheap.
const maxServiceCIDRHostBits = 20

// allocRange numbers the members of a range (IPs, ports) from 0, so an
// allocator can pick by offset and store by name.
type allocRange interface {
	// size is how many members the range has.
	size() uint64
	// member is the name of the member at off (< size).
	member(off uint64) string
	// offset finds a member's offset; ok is false outside the range.
	offset(member string) (off uint64, ok bool)
	// String is the range as Kubernetes words it in errors.
	String() string
}

// ipRange is a service CIDR without its network address (and, for IPv4,
// its broadcast address): offset 0 is the first usable IP, the one the
// `kubernetes` service gets.
type ipRange struct {
	prefix netip.Prefix
	n      uint64
}

// parseServiceCIDR checks a --service-cidr value.
func parseServiceCIDR(cidr string) (*ipRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service CIDR %q: %v", cidr, err)
	}
	if p.Masked() != p {
		return nil, fmt.Errorf("apiserver: service CIDR %q has host bits set: use %s", cidr, p.Masked())
	}
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits > maxServiceCIDRHostBits {
		return nil, fmt.Errorf("apiserver: service CIDR %s is too large: it may hold at most 2^%d addresses (a /%d)",
			cidr, maxServiceCIDRHostBits, p.Addr().BitLen()-maxServiceCIDRHostBits)
	}
	n := uint64(1)<<hostBits - 1 // no network address
	if p.Addr().Is4() {
		n-- // no broadcast address
	}
	if n < 2 {
		return nil, fmt.Errorf("apiserver: service CIDR %s is too small: it needs room for the kubernetes service and at least one more", cidr)
	}
	return &ipRange{prefix: p, n: n}, nil
}

func (r *ipRange) size() uint64 { return r.n }

func (r *ipRange) member(off uint64) string { return addAddr(r.prefix.Addr(), off+1).String() }

func (r *ipRange) offset(member string) (uint64, bool) {
	a, err := netip.ParseAddr(member)
	if err != nil || !r.prefix.Contains(a) {
		return 0, false
	}
	d := low64(a) - low64(r.prefix.Addr())
	if d == 0 || d > r.n {
		return 0, false
	}
	return d - 1, true
}

func (r *ipRange) String() string { return r.prefix.String() }

// first is the range's first usable IP.
func (r *ipRange) first() string { return r.member(0) }

// addAddr adds n to a's low 64 bits; a service range never spans more.
func addAddr(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+n)
	out := netip.AddrFrom16(b)
	if a.Is4() {
		return out.Unmap()
	}
	return out
}

func low64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[8:])
}

// portRange is a range of node ports.
type portRange struct {
	base, n uint64
}

func (r portRange) size() uint64 { return r.n }

func (r portRange) member(off uint64) string { return strconv.FormatUint(r.base+off, 10) }

func (r portRange) offset(member string) (uint64, bool) {
	p, err := strconv.ParseUint(member, 10, 16)
	if err != nil || p < r.base || p >= r.base+r.n {
		return 0, false
	}
	return p - r.base, true
}

func (r portRange) String() string { return fmt.Sprintf("%d-%d", r.base, r.base+r.n-1) }

// staticBand is how many low offsets dynamic allocation leaves for last,
// so that members requested by value (a fixed cluster IP or node port in
// a manifest) rarely find theirs taken: Kubernetes' formula,
// min(max(16, size/div), limit).
func staticBand(size, div, limit uint64) uint64 {
	b := max(16, size/div)
	b = min(b, limit)
	return min(b, size)
}

// FirstServiceIP returns the first IP of a service CIDR, which the
// `kubernetes` service gets: serving certificates must name it so that
// pods can reach the API at https://<that IP>.
func FirstServiceIP(serviceCIDR string) (string, error) {
	if serviceCIDR == "" {
		serviceCIDR = DefaultServiceCIDR
	}
	r, err := parseServiceCIDR(serviceCIDR)
	if err != nil {
		return "", err
	}
	return r.first(), nil
}
