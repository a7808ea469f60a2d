// Package expectations records the pod creations and deletions a
// workload controller has asked for and not yet seen in its informer
// cache, so that a sync working from a stale cache does not create or
// delete the same pods twice. It follows Kubernetes' ControllerExpectations
// and UIDTrackingControllerExpectations.
//
// A controller checks Satisfied before it acts. When it acts, it records
// what it asked for with Expect; its pod event handlers then call
// CreationObserved and DeletionObserved as the cache catches up. A failed
// request is observed at once, since no event will ever come for it.
// Expectations older than TTL are treated as satisfied, so a lost event
// cannot wedge a controller forever.
package expectations

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// TTL is how long an unmet expectation holds a controller back, as in
// Kubernetes (ExpectationsTimeout).
const TTL = 5 * time.Minute

// Expectations tracks, per controller key ("namespace/name"), the pod
// creations and deletions still to be observed. It is safe for concurrent
// use.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*entry
}

// entry is one controller's outstanding requests. Deletions are tracked by
// pod key, because a graceful deletion shows up twice (an update that sets
// deletionTimestamp, then the delete itself) and must count once.
type entry struct {
	adds    int
	deletes map[string]bool
	at      time.Time
}

// New returns empty expectations timed by clk.
func New(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, m: map[string]*entry{}}
}

// Satisfied reports whether the controller may act on its cache: every
// creation and deletion it asked for has been observed, or the record has
// expired, or it never asked for anything.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletes) == 0 {
		return true
	}
	return e.clock.Since(x.at) > TTL
}

// Expect replaces key's record with creations pods to be created and the
// pods named by deletions (pod keys, see PodKey) to be deleted.
func (e *Expectations) Expect(key string, creations int, deletions []string) {
	x := &entry{adds: creations, deletes: make(map[string]bool, len(deletions)), at: e.clock.Now()}
	for _, d := range deletions {
		x.deletes[d] = true
	}
	e.mu.Lock()
	e.m[key] = x
	e.mu.Unlock()
}

// ExpectCreations is Expect with creations only.
func (e *Expectations) ExpectCreations(key string, n int) { e.Expect(key, n, nil) }

// ExpectDeletions is Expect with deletions only.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) { e.Expect(key, 0, podKeys) }

// CreationObserved records that one expected pod creation has been seen,
// or will never be (its request failed or was skipped).
func (e *Expectations) CreationObserved(key string) { e.LowerCreations(key, 1) }

// LowerCreations is CreationObserved n times.
func (e *Expectations) LowerCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds -= n
	}
}

// DeletionObserved records that the deletion of podKey has been seen (or
// its request failed). A pod that was not expected to go is ignored, so
// the second event of a graceful deletion does not count again.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, podKey)
	}
}

// Delete forgets key, when its controller object is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	delete(e.m, key)
	e.mu.Unlock()
}

// Pending returns key's outstanding creations and deletions, for logs and
// tests.
func (e *Expectations) Pending(key string) (creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		return x.adds, len(x.deletes)
	}
	return 0, 0
}

// PodKey is the key under which a pod's deletion is expected.
func PodKey(namespace, name string) string { return namespace + "/" + name }
