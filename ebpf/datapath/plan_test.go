package datapath

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func fe(addr string, port uint16) Frontend {
	return Frontend{Addr: netip.MustParseAddr(addr), Port: port, Proto: TCP}
}

func svc(f Frontend, backends ...string) Service {
	s := Service{Frontend: f}
	for _, b := range backends {
		s.Backends = append(s.Backends, netip.MustParseAddrPort(b))
	}
	return s
}

// applyPlan applies ops to m one at a time and checks after each that a
// reader sees no half-written service.
func applyPlan(t *testing.T, m *mirror, ops []op) {
	t.Helper()
	for i, o := range ops {
		m.apply(o)
		if err := consistent(m); err != nil {
			t.Fatalf("after op %d (%v): %v\nplan: %v", i, o, err, ops)
		}
	}
}

// consistent is what the BPF program relies on: every slot up to a
// master's count exists and names a backend entry of that service.
func consistent(m *mirror) error {
	for f, ms := range m.masters {
		for slot := uint16(1); slot <= ms.count; slot++ {
			id, ok := m.slots[f][slot]
			if !ok {
				return fmt.Errorf("%v: slot %d of %d missing", f, slot, ms.count)
			}
			b, ok := m.backends[id]
			if !ok {
				return fmt.Errorf("%v: slot %d names missing backend %d", f, slot, id)
			}
			if b.svcID != ms.id {
				return fmt.Errorf("%v: slot %d names backend %d of service %d", f, slot, id, b.svcID)
			}
		}
	}
	return nil
}

func kinds(ops []op) []opKind {
	out := make([]opKind, len(ops))
	for i, o := range ops {
		out[i] = o.kind
	}
	return out
}

func backendsOf(m *mirror, f Frontend) []string {
	var out []string
	for slot := uint16(1); slot <= m.masters[f].count; slot++ {
		out = append(out, m.backends[m.slots[f][slot]].addr.String())
	}
	return out
}

func TestPlanWritesInSafeOrder(t *testing.T) {
	web := fe("10.96.0.10", 80)
	tests := []struct {
		name      string
		from      *Service // nil: a fresh mirror
		to        Service
		wantKinds []opKind
		wantSlots []string // backends in slot order afterwards
	}{{
		name:      "new service",
		to:        svc(web, "10.0.0.2:8080", "10.0.0.1:8080"),
		wantKinds: []opKind{putBackend, putBackend, putSlot, putSlot, putMaster},
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.2:8080"},
	}, {
		name:      "new service without endpoints",
		to:        svc(web),
		wantKinds: []opKind{putMaster},
	}, {
		name:      "unchanged",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.2:8080")),
		to:        svc(web, "10.0.0.2:8080", "10.0.0.1:8080"),
		wantKinds: nil,
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.2:8080"},
	}, {
		name:      "backend added",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.3:8080")),
		to:        svc(web, "10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"),
		wantKinds: []opKind{putBackend, putSlot, putMaster},
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.3:8080", "10.0.0.2:8080"},
	}, {
		name:      "last backend removed",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080")),
		to:        svc(web, "10.0.0.1:8080", "10.0.0.2:8080"),
		wantKinds: []opKind{putMaster, deleteSlot, deleteBackend},
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.2:8080"},
	}, {
		name:      "middle backend removed: the last one moves into its slot",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080")),
		to:        svc(web, "10.0.0.1:8080", "10.0.0.3:8080"),
		wantKinds: []opKind{putSlot, putMaster, deleteSlot, deleteBackend},
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.3:8080"},
	}, {
		name:      "backend replaced",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.2:8080")),
		to:        svc(web, "10.0.0.1:8080", "10.0.0.9:8080"),
		wantKinds: []opKind{putBackend, putSlot, deleteBackend},
		wantSlots: []string{"10.0.0.1:8080", "10.0.0.9:8080"},
	}, {
		name:      "all endpoints gone: count 0 refuses connections",
		from:      ptr(svc(web, "10.0.0.1:8080", "10.0.0.2:8080")),
		to:        svc(web),
		wantKinds: []opKind{putMaster, deleteSlot, deleteSlot, deleteBackend, deleteBackend},
	}, {
		name:      "affinity switched on",
		from:      ptr(svc(web, "10.0.0.1:8080")),
		to:        Service{Frontend: web, Backends: svc(web, "10.0.0.1:8080").Backends, AffinityTimeout: 3 * time.Hour},
		wantKinds: []opKind{putMaster},
		wantSlots: []string{"10.0.0.1:8080"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMirror()
			if tt.from != nil {
				applyPlan(t, m, m.planUpsert(mustNormalize(t, *tt.from)))
			}
			ops := m.planUpsert(mustNormalize(t, tt.to))
			if got := kinds(ops); !slices.Equal(got, tt.wantKinds) {
				t.Fatalf("plan = %v, want kinds %v", ops, tt.wantKinds)
			}
			applyPlan(t, m, ops)
			if got := backendsOf(m, web); !slices.Equal(got, tt.wantSlots) {
				t.Errorf("slots = %v, want %v", got, tt.wantSlots)
			}
			if again := m.planUpsert(mustNormalize(t, tt.to)); len(again) != 0 {
				t.Errorf("second plan for the same service = %v, want no writes", again)
			}
			if len(m.backends) != len(tt.wantSlots) {
				t.Errorf("%d backend entries, want %d: stale ones must go", len(m.backends), len(tt.wantSlots))
			}
		})
	}
}

func TestPlanDeleteRemovesMasterFirst(t *testing.T) {
	web := fe("10.96.0.10", 80)
	m := newMirror()
	applyPlan(t, m, m.planUpsert(mustNormalize(t, svc(web, "10.0.0.1:8080", "10.0.0.2:8080"))))
	ops := m.planDelete(web)
	want := []opKind{deleteMaster, deleteSlot, deleteSlot, deleteBackend, deleteBackend}
	if got := kinds(ops); !slices.Equal(got, want) {
		t.Fatalf("plan = %v, want kinds %v", ops, want)
	}
	applyPlan(t, m, ops)
	if len(m.masters)+len(m.slots)+len(m.backends)+len(m.refs) != 0 {
		t.Errorf("mirror not empty after delete: %+v", m)
	}
}

func TestPlanKeepsServicesApart(t *testing.T) {
	// Two services with the same endpoint get an entry each, so that
	// dropping it from one leaves the other untouched.
	a, b := fe("10.96.0.10", 80), fe("10.96.0.11", 80)
	m := newMirror()
	applyPlan(t, m, m.planUpsert(mustNormalize(t, svc(a, "10.0.0.1:8080"))))
	applyPlan(t, m, m.planUpsert(mustNormalize(t, svc(b, "10.0.0.1:8080"))))
	applyPlan(t, m, m.planDelete(a))
	if got := backendsOf(m, b); !slices.Equal(got, []string{"10.0.0.1:8080"}) {
		t.Errorf("other service's backends = %v after delete", got)
	}
}

func TestPlanRandomTransitionsStayConsistent(t *testing.T) {
	// Walk one service through many backend sets; every intermediate state
	// must be readable, and ids of removed backends are never reused.
	web := fe("10.96.0.10", 80)
	m := newMirror()
	seen := map[uint32]string{}
	state := uint64(1)
	for step := range 300 {
		state = state*6364136223846793005 + 1442695040888963407
		var backends []string
		for i := range 12 {
			if state>>(i+20)&1 == 1 {
				backends = append(backends, fmt.Sprintf("10.0.0.%d:8080", i+1))
			}
		}
		ops := m.planUpsert(mustNormalize(t, svc(web, backends...)))
		for _, o := range ops {
			if o.kind == putBackend {
				if prev, ok := seen[o.id]; ok {
					t.Fatalf("step %d: backend id %d reused (was %s)", step, o.id, prev)
				}
				seen[o.id] = o.backend.String()
			}
		}
		applyPlan(t, m, ops)
		got := backendsOf(m, web)
		slices.Sort(got)
		slices.Sort(backends)
		if !slices.Equal(got, backends) {
			t.Fatalf("step %d: backends %v, want %v", step, got, backends)
		}
		if len(m.backends) != len(backends) {
			t.Fatalf("step %d: %d backend entries for %d backends", step, len(m.backends), len(backends))
		}
	}
}

func TestPlanCleansUpAfterInterruptedWriter(t *testing.T) {
	// What a crash between writes leaves: a backend no slot uses, and
	// slots of a service whose master never got written.
	m := newMirror()
	orphan := fe("10.96.0.20", 53)
	m.apply(op{kind: putBackend, id: 7, backend: netip.MustParseAddrPort("10.0.0.7:53"), svcID: 3})
	m.apply(op{kind: putBackend, id: 8, backend: netip.MustParseAddrPort("10.0.0.8:53"), svcID: 4})
	m.apply(op{kind: putSlot, fe: orphan, slot: 1, id: 8})
	applyPlan(t, m, m.planStraySlots())
	applyPlan(t, m, m.planUnusedBackends())
	if len(m.slots)+len(m.backends) != 0 {
		t.Errorf("left over: slots %v backends %v", m.slots, m.backends)
	}
}

func TestNormalizeRejectsBadServices(t *testing.T) {
	web := fe("10.96.0.10", 80)
	tests := []struct {
		name string
		svc  Service
	}{
		{"no address", Service{Frontend: Frontend{Port: 80, Proto: TCP}}},
		{"SCTP", Service{Frontend: Frontend{Addr: web.Addr, Port: 80, Proto: 132}}},
		{"mixed families", svc(web, "[fd00::1]:8080")},
		{"port 0 backend", svc(web, "10.0.0.1:0")},
		{"negative affinity", Service{Frontend: web, AffinityTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.svc.normalize(); err == nil {
				t.Errorf("normalize(%+v) succeeded, want an error", tt.svc)
			}
		})
	}
}

func TestAddressEncodingRoundTrips(t *testing.T) {
	for _, a := range []string{"10.96.0.10", "127.0.0.1", "fd00::1", "2001:db8::ff00:42:8329"} {
		t.Run(a, func(t *testing.T) {
			addr := netip.MustParseAddr(a)
			if got := wordsAddr(addrWords(addr)); got != addr {
				t.Errorf("round trip = %v", got)
			}
		})
	}
	if got := portHost(portBE(8080)); got != 8080 {
		t.Errorf("port round trip = %d", got)
	}
}

func mustNormalize(t *testing.T, s Service) Service {
	t.Helper()
	n, err := s.normalize()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }
