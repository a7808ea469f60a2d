package kubelet

import (
	"sync"
	"time"
)

// Backoff spaces the restarts of a failing container (CrashLoopBackOff)
// or the pulls of a failing image (ImagePullBackOff), as the kubelet
// does: the first retry is immediate, then each waits twice as long as
// the one before, from Base up to Max. A container that ran for Reset
// before it exited starts over from Base.
//
// For a container that exits at once each time, with Base 10s:
//
//	exit 1 → restart at once     (delay becomes 10s)
//	exit 2 → restart after 10s   (delay becomes 20s)
//	exit 3 → restart after 20s   (delay becomes 40s) ... up to Max
type Backoff struct {
	Base, Max, Reset time.Duration

	mu      sync.Mutex
	entries map[string]time.Duration
}

// NewBackoff returns a Backoff.
func NewBackoff(base, maxDelay, reset time.Duration) *Backoff {
	return &Backoff{Base: base, Max: maxDelay, Reset: reset, entries: map[string]time.Duration{}}
}

// Wait returns how long the retry of key must still wait when its last
// attempt ended at failedAt after running for ranFor; zero means it may
// go now.
func (b *Backoff) Wait(key string, failedAt time.Time, ranFor time.Duration, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	delay, ok := b.entries[key]
	if !ok || (b.Reset > 0 && ranFor >= b.Reset) {
		return 0
	}
	if left := failedAt.Add(delay).Sub(now); left > 0 {
		return left
	}
	return 0
}

// Next records a retry of key, lengthening the wait before the one
// after.
func (b *Backoff) Next(key string, ranFor time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delay, ok := b.entries[key]
	switch {
	case !ok || (b.Reset > 0 && ranFor >= b.Reset):
		delay = b.Base
	default:
		delay = min(2*delay, b.Max)
	}
	b.entries[key] = delay
}

// Delay is the wait key is at, for messages.
func (b *Backoff) Delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries[key]
}

// Forget drops every key that starts with prefix (a pod's UID).
func (b *Backoff) Forget(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}
