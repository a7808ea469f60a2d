package clusterutil

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a controller trusts its expectations:
// past it, a create or delete whose event never arrived (the watch was
// lost) no longer blocks the controller.
const ExpectationsTimeout = 5 * time.Minute

// Expectations count, per controller key, the pod creations and deletions
// a controller has asked for and not yet seen in its informer. While some
// are pending the informer is behind the controller's own writes, and
// acting on it would create or delete twice.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	items map[string]*expectation
}

type expectation struct {
	adds, dels int
	at         time.Time
}

// NewExpectations returns empty expectations timed by clk.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, items: map[string]*expectation{}}
}

// Satisfied reports whether key has nothing pending (or its expectations
// expired), that is whether the informer can be trusted for key.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.items[key]
	if !ok {
		return true
	}
	return (x.adds <= 0 && x.dels <= 0) || e.clock.Since(x.at) > ExpectationsTimeout
}

// Expect records that adds creations and dels deletions are about to be
// issued for key, replacing what was pending.
func (e *Expectations) Expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.items[key] = &expectation{adds: adds, dels: dels, at: e.clock.Now()}
}

// CreationObserved lowers key's pending creations by one: an informer saw
// a pod appear, or a create failed and will never be seen.
func (e *Expectations) CreationObserved(key string) { e.lower(key, 1, 0) }

// DeletionObserved lowers key's pending deletions by one.
func (e *Expectations) DeletionObserved(key string) { e.lower(key, 0, 1) }

func (e *Expectations) lower(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.items[key]; ok {
		x.adds -= adds
		x.dels -= dels
	}
}

// Delete forgets key, when its object is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.items, key)
}
