package datapath

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// opKind is one kind of map write. The order of the constants is the order
// in which a plan for one service issues them.
type opKind uint8

const (
	putBackend opKind = iota + 1
	putSlot
	putMaster
	deleteMaster
	deleteSlot
	deleteBackend
)

func (k opKind) String() string {
	switch k {
	case putBackend:
		return "putBackend"
	case putSlot:
		return "putSlot"
	case putMaster:
		return "putMaster"
	case deleteMaster:
		return "deleteMaster"
	case deleteSlot:
		return "deleteSlot"
	case deleteBackend:
		return "deleteBackend"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// op is one map write.
type op struct {
	kind    opKind
	fe      Frontend
	slot    uint16         // putSlot, deleteSlot
	id      uint32         // backend id: putBackend, putSlot, deleteBackend
	backend netip.AddrPort // putBackend
	svcID   uint32         // putBackend: the owning service
	master  master         // putMaster
}

func (o op) String() string {
	switch o.kind {
	case putBackend:
		return fmt.Sprintf("%v %d=%v (svc %d)", o.kind, o.id, o.backend, o.svcID)
	case putSlot:
		return fmt.Sprintf("%v %v#%d=%d", o.kind, o.fe, o.slot, o.id)
	case putMaster:
		return fmt.Sprintf("%v %v count=%d id=%d", o.kind, o.fe, o.master.count, o.master.id)
	case deleteSlot:
		return fmt.Sprintf("%v %v#%d", o.kind, o.fe, o.slot)
	case deleteBackend:
		return fmt.Sprintf("%v %d", o.kind, o.id)
	}
	return fmt.Sprintf("%v %v", o.kind, o.fe)
}

// planUpsert returns the writes that turn the mirror's version of s into s,
// none if they already agree. s must be normalized.
//
// A backend that stays keeps its id and, when it still fits, its slot; the
// others fill the free slots in address order. For example, going from
// slots [1:a 2:b 3:c] to backends {a, c, d} keeps a in 1 and c in 3, puts
// d in 2 (a new backend entry first, then the slot), and deletes b's
// backend entry last. Going to {a, c} instead moves c to slot 2, lowers the
// count to 2, and only then deletes slot 3 and b.
func (m *mirror) planUpsert(s Service) []op {
	fe := s.Frontend
	n := len(s.Backends)
	cur := m.slots[fe]
	curSlots := sortedSlots(cur)

	want := make(map[netip.AddrPort]bool, n)
	for _, b := range s.Backends {
		want[b] = true
	}
	old, exists := m.masters[fe]
	ms := master{id: old.id, count: uint16(n), timeout: s.affinitySeconds()}
	if ms.timeout > 0 {
		ms.flags |= flagAffinity
	}
	if !exists {
		ms.id = m.allocSvcID()
	}

	// The ids this service already has, by address. An entry of another
	// service (possible only in a restored, inconsistent map) is not ours
	// to reuse.
	have := map[netip.AddrPort]uint32{}
	for _, slot := range curSlots {
		id := cur[slot]
		if b, ok := m.backends[id]; ok && b.svcID == ms.id {
			if _, dup := have[b.addr]; !dup {
				have[b.addr] = id
			}
		}
	}

	next := make([]uint32, n+1) // next[slot]; slot 0 is the master
	placed := map[netip.AddrPort]bool{}
	for _, slot := range curSlots {
		if int(slot) > n {
			continue
		}
		id := cur[slot]
		if b, ok := m.backends[id]; ok && want[b.addr] && !placed[b.addr] && have[b.addr] == id {
			next[slot] = id
			placed[b.addr] = true
		}
	}

	var ops []op
	free := 1
	for _, b := range s.Backends {
		if placed[b] {
			continue
		}
		id, ok := have[b]
		if !ok {
			id = m.allocBackendID()
			ops = append(ops, op{kind: putBackend, id: id, backend: b, svcID: ms.id})
		}
		for next[free] != 0 {
			free++
		}
		next[free] = id
		placed[b] = true
	}
	for slot := 1; slot <= n; slot++ {
		if id, ok := cur[uint16(slot)]; !ok || id != next[slot] {
			ops = append(ops, op{kind: putSlot, fe: fe, slot: uint16(slot), id: next[slot]})
		}
	}
	if !exists || old != ms {
		ops = append(ops, op{kind: putMaster, fe: fe, master: ms})
	}
	for _, slot := range curSlots {
		if int(slot) > n {
			ops = append(ops, op{kind: deleteSlot, fe: fe, slot: slot})
		}
	}
	kept := make(map[uint32]bool, n)
	for _, id := range next[1:] {
		kept[id] = true
	}
	return append(ops, m.planReleaseBackends(fe, kept)...)
}

// planDelete returns the writes that remove the service at fe: the master
// first, so new connections stop matching before anything else goes.
func (m *mirror) planDelete(fe Frontend) []op {
	var ops []op
	if _, ok := m.masters[fe]; ok {
		ops = append(ops, op{kind: deleteMaster, fe: fe})
	}
	for _, slot := range sortedSlots(m.slots[fe]) {
		ops = append(ops, op{kind: deleteSlot, fe: fe, slot: slot})
	}
	return append(ops, m.planReleaseBackends(fe, nil)...)
}

// planReleaseBackends deletes the backends the slots of fe point at, except
// kept ones and ones another service's slots still use.
func (m *mirror) planReleaseBackends(fe Frontend, kept map[uint32]bool) []op {
	mine := map[uint32]int{}
	for _, id := range m.slots[fe] {
		mine[id]++
	}
	ids := make([]uint32, 0, len(mine))
	for id, n := range mine {
		if _, ok := m.backends[id]; ok && !kept[id] && m.refs[id] == n {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ops := make([]op, 0, len(ids))
	for _, id := range ids {
		ops = append(ops, op{kind: deleteBackend, id: id})
	}
	return ops
}

// planStraySlots removes slots of frontends without master, which only an
// interrupted writer leaves behind.
func (m *mirror) planStraySlots() []op {
	var fes []Frontend
	for fe := range m.slots {
		if _, ok := m.masters[fe]; !ok {
			fes = append(fes, fe)
		}
	}
	slices.SortFunc(fes, compareFrontends)
	var ops []op
	for _, fe := range fes {
		for _, slot := range sortedSlots(m.slots[fe]) {
			ops = append(ops, op{kind: deleteSlot, fe: fe, slot: slot})
		}
	}
	return ops
}

// planUnusedBackends removes backends no slot points at. Run it once the
// services are in place, when every live backend is referenced.
func (m *mirror) planUnusedBackends() []op {
	var ids []uint32
	for id := range m.backends {
		if m.refs[id] == 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ops := make([]op, 0, len(ids))
	for _, id := range ids {
		ops = append(ops, op{kind: deleteBackend, id: id})
	}
	return ops
}

func sortedSlots(s map[uint16]uint32) []uint16 {
	out := make([]uint16, 0, len(s))
	for slot := range s {
		out = append(out, slot)
	}
	slices.Sort(out)
	return out
}

func secondsDuration(s uint32) time.Duration { return time.Duration(s) * time.Second }
