package datapath

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"
)

// Proto is the transport protocol of a frontend, numbered as in IP headers.
type Proto uint8

// The protocols the programs balance.
const (
	TCP Proto = 6
	UDP Proto = 17
)

// String returns the protocol name as Kubernetes spells it.
func (p Proto) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	}
	return fmt.Sprintf("proto(%d)", uint8(p))
}

// Frontend is a Service address the programs translate: a ClusterIP, a
// port and a protocol.
type Frontend struct {
	Addr  netip.Addr
	Port  uint16
	Proto Proto
}

// String formats the frontend as addr:port/PROTO.
func (f Frontend) String() string {
	return netip.AddrPortFrom(f.Addr, f.Port).String() + "/" + f.Proto.String()
}

// Service is a frontend and the backends its connections go to.
type Service struct {
	Frontend
	// Backends receive the connections. An empty list makes connect()
	// fail with ECONNREFUSED.
	Backends []netip.AddrPort
	// AffinityTimeout, when positive, sends a client back to the backend
	// it used last if it returns within this time (sessionAffinity
	// ClientIP). The client is identified by its network namespace.
	AffinityTimeout time.Duration
}

const maxBackends = math.MaxUint16

// normalize checks s and returns it with IPv4-mapped addresses unmapped and
// backends sorted and deduplicated, so equal inputs plan equal writes.
func (s Service) normalize() (Service, error) {
	s.Addr = s.Addr.Unmap()
	if !s.Addr.IsValid() {
		return s, fmt.Errorf("datapath: service %v: invalid address", s.Frontend)
	}
	if s.Proto != TCP && s.Proto != UDP {
		return s, fmt.Errorf("datapath: service %v: only TCP and UDP are balanced", s.Frontend)
	}
	if s.AffinityTimeout < 0 || s.AffinityTimeout.Seconds() > math.MaxUint32 {
		return s, fmt.Errorf("datapath: service %v: affinity timeout %v out of range", s.Frontend, s.AffinityTimeout)
	}
	backends := make([]netip.AddrPort, 0, len(s.Backends))
	for _, b := range s.Backends {
		b = netip.AddrPortFrom(b.Addr().Unmap(), b.Port())
		if !b.Addr().IsValid() || b.Port() == 0 {
			return s, fmt.Errorf("datapath: service %v: invalid backend %v", s.Frontend, b)
		}
		if b.Addr().Is4() != s.Addr.Is4() {
			return s, fmt.Errorf("datapath: service %v: backend %v is of another address family", s.Frontend, b)
		}
		backends = append(backends, b)
	}
	slices.SortFunc(backends, func(a, b netip.AddrPort) int { return a.Compare(b) })
	backends = slices.Compact(backends)
	if len(backends) > maxBackends {
		return s, fmt.Errorf("datapath: service %v: %d backends, at most %d fit", s.Frontend, len(backends), maxBackends)
	}
	s.Backends = backends
	return s, nil
}

// affinitySeconds rounds the timeout up so that a sub-second timeout still
// enables affinity.
func (s Service) affinitySeconds() uint32 {
	if s.AffinityTimeout <= 0 {
		return 0
	}
	return uint32((s.AffinityTimeout + time.Second - 1) / time.Second)
}

// The maps store addresses and ports in network byte order; the generated Go
// types read them as native-endian integers, hence the conversions.

func addrWords(a netip.Addr) [4]uint32 {
	b := a.As16()
	var w [4]uint32
	for i := range w {
		w[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return w
}

func wordsAddr(w [4]uint32) netip.Addr {
	var b [16]byte
	for i := range w {
		binary.NativeEndian.PutUint32(b[4*i:], w[i])
	}
	return netip.AddrFrom16(b).Unmap()
}

func portBE(p uint16) uint16 {
	return binary.NativeEndian.Uint16([]byte{byte(p >> 8), byte(p)})
}

func portHost(p uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], p)
	return binary.BigEndian.Uint16(b[:])
}
