package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deleted stands for "expected gone" in the tracker.
const deleted int64 = -1

// tracker remembers, per service, the generation of each slice this
// controller last wrote (or that it deleted one). Two things follow:
//
//   - a sync whose informer has not yet seen those writes would act on an
//     old view, and for instance create a second slice for the same pods;
//     it is refused (stale) and retried.
//   - a slice event that only echoes this controller's write does not
//     need a sync; an event from anyone else does.
//
// Example: the controller creates slice A (generation 1) for service s,
// tracked as s: {A: 1}. A pod event syncs s before A reaches the
// informer: A is missing from the cache, s is stale, the sync retries.
// A's add event arrives with generation 1: an echo, ignored. A user edits
// A (generation 2): not an echo, s is synced and A rewritten (3).
type tracker struct {
	mu    sync.Mutex
	gens  map[string]map[types.UID]int64 // service key -> slice uid -> generation
	owner map[types.UID]string           // slice uid -> service key
}

func newTracker() *tracker {
	return &tracker{gens: map[string]map[types.UID]int64{}, owner: map[types.UID]string{}}
}

// wrote records that svc's slice s now has s.Generation.
func (t *tracker) wrote(svc string, s *discoveryv1.EndpointSlice) { t.set(svc, s.UID, s.Generation) }

// removed records that svc's slice s was deleted.
func (t *tracker) removed(svc string, s *discoveryv1.EndpointSlice) { t.set(svc, s.UID, deleted) }

func (t *tracker) set(svc string, uid types.UID, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.gens[svc]
	if !ok {
		m = map[types.UID]int64{}
		t.gens[svc] = m
	}
	m[uid] = gen
	t.owner[uid] = svc
}

// stale reports whether cached, svc's slices as an informer holds them,
// lacks a write this controller made.
func (t *tracker) stale(svc string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	byUID := make(map[types.UID]*discoveryv1.EndpointSlice, len(cached))
	for _, s := range cached {
		byUID[s.UID] = s
	}
	for uid, gen := range t.gens[svc] {
		s, ok := byUID[uid]
		switch {
		case gen == deleted && ok:
			return true
		case gen != deleted && (!ok || s.Generation < gen):
			return true
		}
	}
	return false
}

// echo reports whether s is exactly what this controller last wrote.
func (t *tracker) echo(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc, ok := t.owner[s.UID]
	if !ok {
		return false
	}
	return t.gens[svc][s.UID] == s.Generation
}

// gone forgets a slice the informer saw deleted, and reports whether
// this controller deleted it.
func (t *tracker) gone(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc, ok := t.owner[s.UID]
	if !ok {
		return false
	}
	ours := t.gens[svc][s.UID] == deleted
	delete(t.gens[svc], s.UID)
	if len(t.gens[svc]) == 0 {
		delete(t.gens, svc)
	}
	delete(t.owner, s.UID)
	return ours
}

// forget drops everything about svc, once it is gone.
func (t *tracker) forget(svc string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.gens[svc] {
		delete(t.owner, uid)
	}
	delete(t.gens, svc)
}
