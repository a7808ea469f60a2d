package raftstore

import (
	"context"
	"sync"
	"time"
)

// indexWaiter lets readers wait until the FSM has applied a log index.
type indexWaiter struct {
	mu      sync.Mutex
	applied uint64
	ch      chan struct{} // closed and replaced on every advance
}

func newIndexWaiter() *indexWaiter {
	return &indexWaiter{ch: make(chan struct{})}
}

func (w *indexWaiter) advance(index uint64) {
	w.mu.Lock()
	if index > w.applied {
		w.applied = index
	}
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// wait returns once index has been applied, or when ctx ends.
func (w *indexWaiter) wait(ctx context.Context, index uint64) error {
	for {
		w.mu.Lock()
		if w.applied >= index {
			w.mu.Unlock()
			return nil
		}
		ch := w.ch
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func timeAfter20ms() <-chan time.Time { return time.After(20 * time.Millisecond) }
