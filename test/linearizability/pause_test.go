package linearizability

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestResumedLeaderServesNoStaleRead freezes a leader that is busy
// replicating, lets the others elect a new leader and commit a write, and
// asks the frozen replica for that key the moment it resumes. A deposed
// leader must refuse or answer with the new write: replies to requests it
// sent before the freeze may still wait in its sockets, and they must not
// count as a quorum confirming its leadership.
func TestResumedLeaderServesNoStaleRead(t *testing.T) {
	if testing.Short() {
		t.Skip("whole-cluster fault test: skipped with -short")
	}
	c := startCluster(t, serverBinary(t))
	ctx := t.Context()
	const rounds = 10
	for round := range rounds {
		if err := pauseRound(ctx, t, c, round); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func pauseRound(ctx context.Context, t *testing.T, c *cluster, round int) error {
	old, err := c.waitLeader(ctx, nil)
	if err != nil {
		return err
	}
	pinned, err := c.client(c.members[old].storeAddr)
	if err != nil {
		return err
	}
	defer pinned.Close()
	key := fmt.Sprintf("%spause-%d", prefix, round)
	if _, err := pinned.Put(ctx, key, "before"); err != nil {
		return fmt.Errorf("put on the leader: %w", err)
	}

	// Keep the leader's replication busy so that appends are in flight
	// when it freezes.
	busy, stopBusy := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for busy.Err() == nil {
				octx, cancel := context.WithTimeout(busy, 500*time.Millisecond)
				pinned.Put(octx, fmt.Sprintf("%sbusy-%d", prefix, w), "x")
				cancel()
			}
		})
	}
	time.Sleep(200 * time.Millisecond)

	m := c.members[old]
	t.Logf("round %d: freezing leader %s", round, m.name)
	if err := m.signal(syscall.SIGSTOP); err != nil {
		stopBusy()
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			m.signal(syscall.SIGCONT)
		}
	}()
	stopBusy()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	next, err := c.waitLeader(wctx, others(old))
	if err != nil {
		return err
	}
	put, err := c.admin[next].Put(wctx, key, "after")
	if err != nil {
		return fmt.Errorf("put on the new leader %s: %w", c.members[next].name, err)
	}
	// Readers ask before the replica resumes, so that their requests wait
	// in its sockets beside the stale replies and are served at once.
	stale := make(chan error, 4)
	var readers sync.WaitGroup
	until := time.Now().Add(500 * time.Millisecond)
	for range 4 {
		readers.Go(func() {
			for time.Now().Before(until) && ctx.Err() == nil {
				gctx, cancel := context.WithTimeout(ctx, time.Second)
				got, err := pinned.Get(gctx, key)
				cancel()
				if err == nil && (len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "after") {
					stale <- fmt.Errorf("the resumed replica %s served a stale read: %v at revision %d, after %q was committed at revision %d",
						m.name, got.Kvs, got.Header.Revision, "after", put.Header.Revision)
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := m.signal(syscall.SIGCONT); err != nil {
		return err
	}
	resumed = true
	readers.Wait()
	close(stale)
	if err := <-stale; err != nil {
		return err
	}
	wg.Wait()
	hctx, hcancel := context.WithTimeout(ctx, 20*time.Second)
	defer hcancel()
	return c.waitHealthy(hctx)
}
