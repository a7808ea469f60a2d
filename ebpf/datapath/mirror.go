package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"
)

// flagAffinity matches SVC_FLAG_AFFINITY in bpf/socklb.c.
const flagAffinity = 0x1

// master is the slot-0 entry of a service in cairn_svc.
type master struct {
	id      uint32
	count   uint16
	flags   uint16
	timeout uint32
}

// backend is an entry of cairn_backends. Every backend belongs to one
// service, so removing it from that service can never affect another.
type backend struct {
	addr  netip.AddrPort
	svcID uint32
}

// mirror is the content of cairn_svc and cairn_backends as this process
// last wrote or read it. Plans are computed against it, and it changes
// only when a write has succeeded, so it never claims more than the maps
// hold.
type mirror struct {
	masters  map[Frontend]master
	slots    map[Frontend]map[uint16]uint32
	backends map[uint32]backend
	// refs counts the slots that point at each backend id.
	refs map[uint32]int
	// svcIDs holds the ids of the masters.
	svcIDs map[uint32]struct{}

	lastSvcID     uint32
	lastBackendID uint32
}

func newMirror() *mirror {
	return &mirror{
		masters:  map[Frontend]master{},
		slots:    map[Frontend]map[uint16]uint32{},
		backends: map[uint32]backend{},
		refs:     map[uint32]int{},
		svcIDs:   map[uint32]struct{}{},
	}
}

// allocSvcID and allocBackendID hand out increasing ids and skip ids in
// use once the counter wraps. Ids are not reused soon after release, which
// keeps a stale affinity entry from naming a newcomer.
func (m *mirror) allocSvcID() uint32 {
	for {
		m.lastSvcID++
		if _, used := m.svcIDs[m.lastSvcID]; m.lastSvcID != 0 && !used {
			return m.lastSvcID
		}
	}
}

func (m *mirror) allocBackendID() uint32 {
	for {
		m.lastBackendID++
		if _, used := m.backends[m.lastBackendID]; m.lastBackendID != 0 && !used {
			return m.lastBackendID
		}
	}
}

// apply records a write that has reached the maps.
func (m *mirror) apply(o op) {
	switch o.kind {
	case putBackend:
		m.backends[o.id] = backend{addr: o.backend, svcID: o.svcID}
	case putSlot:
		s := m.slots[o.fe]
		if s == nil {
			s = map[uint16]uint32{}
			m.slots[o.fe] = s
		}
		if old, ok := s[o.slot]; ok {
			m.unref(old)
		}
		s[o.slot] = o.id
		m.refs[o.id]++
	case putMaster:
		m.masters[o.fe] = o.master
		m.svcIDs[o.master.id] = struct{}{}
	case deleteMaster:
		if ms, ok := m.masters[o.fe]; ok {
			delete(m.svcIDs, ms.id)
			delete(m.masters, o.fe)
		}
	case deleteSlot:
		s := m.slots[o.fe]
		if old, ok := s[o.slot]; ok {
			m.unref(old)
			delete(s, o.slot)
		}
		if len(s) == 0 {
			delete(m.slots, o.fe)
		}
	case deleteBackend:
		delete(m.backends, o.id)
	}
}

func (m *mirror) unref(id uint32) {
	if m.refs[id]--; m.refs[id] <= 0 {
		delete(m.refs, id)
	}
}

// services returns the programmed services, backends in slot order.
func (m *mirror) services() []Service {
	out := make([]Service, 0, len(m.masters))
	for fe, ms := range m.masters {
		s := Service{Frontend: fe}
		if ms.flags&flagAffinity != 0 {
			s.AffinityTimeout = secondsDuration(ms.timeout)
		}
		for slot := uint16(1); slot <= ms.count; slot++ {
			if id, ok := m.slots[fe][slot]; ok {
				if b, ok := m.backends[id]; ok {
					s.Backends = append(s.Backends, b.addr)
				}
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Service) int { return compareFrontends(a.Frontend, b.Frontend) })
	return out
}

func compareFrontends(a, b Frontend) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	if a.Port != b.Port {
		return int(a.Port) - int(b.Port)
	}
	return int(a.Proto) - int(b.Proto)
}

// svcEntries is the number of cairn_svc entries the mirror accounts for.
func (m *mirror) svcEntries() int {
	n := len(m.masters)
	for _, s := range m.slots {
		n += len(s)
	}
	return n
}

// readMirror rebuilds the mirror from the maps, e.g. after a restart. It
// keeps whatever it finds, including what an interrupted writer left
// behind (slots without master, unused backends); a full Sync removes it.
func readMirror(svcMap, backendMap *ebpf.Map) (*mirror, error) {
	m := newMirror()
	var (
		key socklbSvcKey
		val socklbSvcValue
	)
	it := svcMap.Iterate()
	for it.Next(&key, &val) {
		fe := Frontend{Addr: wordsAddr(key.Addr), Port: portHost(key.Port), Proto: Proto(key.Proto)}
		if key.Slot == 0 {
			m.masters[fe] = master{id: val.SvcId, count: val.Count, flags: val.Flags, timeout: val.AffinityTimeout}
			m.svcIDs[val.SvcId] = struct{}{}
			m.lastSvcID = max(m.lastSvcID, val.SvcId)
			continue
		}
		if m.slots[fe] == nil {
			m.slots[fe] = map[uint16]uint32{}
		}
		m.slots[fe][key.Slot] = val.BackendId
		m.refs[val.BackendId]++
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("datapath: read %s: %w", svcMap, err)
	}
	var (
		id uint32
		be socklbBackend
	)
	it = backendMap.Iterate()
	for it.Next(&id, &be) {
		m.backends[id] = backend{addr: netip.AddrPortFrom(wordsAddr(be.Addr), portHost(be.Port)), svcID: be.SvcId}
		m.lastBackendID = max(m.lastBackendID, id)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("datapath: read %s: %w", backendMap, err)
	}
	return m, nil
}

func isNotFound(err error) bool { return errors.Is(err, ebpf.ErrKeyNotExist) }
