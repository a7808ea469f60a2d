package keyqueue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

func TestRunRetriesFailuresAndStopsWithItsContext(t *testing.T) {
	q := New("test")
	var mu sync.Mutex
	calls := map[string]int{}
	synced := make(chan string, 10)
	syncFn := func(_ context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		if key == "ns/flaky" && n < 3 {
			return errors.New("not yet")
		}
		synced <- key
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, q, 2, syncFn, slog.New(slog.DiscardHandler))
		close(done)
	}()
	q.Add("ns/ok")
	q.Add("ns/flaky")
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case k := <-synced:
			got[k] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("synced %v within 5s", got)
		}
	}
	mu.Lock()
	if calls["ns/flaky"] != 3 || calls["ns/ok"] != 1 {
		t.Fatalf("calls %v: want the failing key retried until it succeeds", calls)
	}
	mu.Unlock()
	// The worker forgets the key's failures just after its sync returns.
	for deadline := time.Now().Add(5 * time.Second); q.NumRequeues("ns/flaky") != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a key that finally synced still counts its failures")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
