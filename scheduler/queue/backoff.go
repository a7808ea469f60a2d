package queue

import (
	"context"
	"time"

	"cairn/scheduler/framework"
)

// Run moves pods whose backoff ended to active every second, and flushes
// pods unschedulable for too long every 30 seconds, until ctx is done;
// then it closes the queue.
func (q *Queue) Run(ctx context.Context) {
	backoff := q.cfg.Clock.NewTicker(backoffFlushInterval)
	defer backoff.Stop()
	leftover := q.cfg.Clock.NewTicker(unschedulableFlushInterval)
	defer leftover.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-backoff.C():
			q.flushBackoffCompleted()
		case <-leftover.C():
			q.flushUnschedulableLeftover()
		}
	}
}

// backoffDuration is initial * 2^(attempts-1), capped at the maximum.
func (q *Queue) backoffDuration(attempts int) time.Duration {
	d := q.cfg.InitialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.cfg.MaxBackoff-d {
			return q.cfg.MaxBackoff
		}
		d += d
	}
	return min(d, q.cfg.MaxBackoff)
}

func (q *Queue) backoffExpiry(p *framework.QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p.Attempts))
}

func (q *Queue) flushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	moved := false
	for p := q.backoff.peek(); p != nil && !q.backoffExpiry(p).After(now); p = q.backoff.peek() {
		q.backoff.pop()
		q.active.addOrUpdate(p)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
	}
}

func (q *Queue) flushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for uid, p := range q.unschedulable {
		if now.Sub(p.Timestamp) > q.cfg.MaxInUnschedulable {
			delete(q.unschedulable, uid)
			q.unsafeMove(p)
		}
	}
}
