package clusterutil

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := NewExpectations(clk)
	for _, step := range []struct {
		name string
		do   func()
		want bool
	}{
		{"nothing expected", func() {}, true},
		{"two creations and a deletion pending", func() { e.Expect("k", 2, 1) }, false},
		{"one creation seen", func() { e.CreationObserved("k") }, false},
		{"all creations seen", func() { e.CreationObserved("k") }, false},
		{"the deletion seen", func() { e.DeletionObserved("k") }, true},
		{"pending again", func() { e.Expect("k", 1, 0) }, false},
		{"expired", func() { clk.Step(ExpectationsTimeout + time.Second) }, true},
		{"forgotten", func() { e.Expect("k", 1, 0); e.Delete("k") }, true},
	} {
		step.do()
		if got := e.Satisfied("k"); got != step.want {
			t.Errorf("%s: satisfied = %v, want %v", step.name, got, step.want)
		}
	}
}

func TestRunWorkersRetriesFailedKeys(t *testing.T) {
	q := NewQueue("test", nil)
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		RunWorkers(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), q, 2, func(_ context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			if key == "flaky" && calls[key] < 3 {
				return errors.New("not yet")
			}
			if calls["flaky"] == 3 && calls["ok"] == 1 {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			return nil
		})
	}()
	q.Add("flaky")
	q.Add("ok")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("calls %v", calls)
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	if calls["ok"] != 1 || calls["flaky"] != 3 {
		t.Errorf("calls %v, want ok once and flaky three times", calls)
	}
}
