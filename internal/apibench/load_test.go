package apibench

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoopSendsEachRequestOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	res := loop{name: "x", clients: 4, total: 50, timeout: time.Second, log: slog.New(slog.DiscardHandler),
		op: func(_ context.Context, w, i int) error {
			if w < 0 || w >= 4 {
				t.Errorf("client %d out of range", w)
			}
			mu.Lock()
			seen[i]++
			mu.Unlock()
			if i%10 == 0 {
				return errors.New("boom")
			}
			return nil
		}}.run(context.Background())
	if len(seen) != 50 {
		t.Errorf("%d distinct requests, want 50", len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("request %d sent %d times", i, n)
		}
	}
	if res.Requests != 45 || res.Errors != 5 || res.FirstError != "boom" || res.Clients != 4 || res.Name != "x" {
		t.Errorf("result %+v, want 45 requests and 5 errors", res)
	}
	if res.Throughput <= 0 || res.Latency.Max < res.Latency.P50 {
		t.Errorf("result %+v has no throughput or inconsistent latency", res)
	}
}

func TestLoopStopsABrokenServerEarly(t *testing.T) {
	res := loop{name: "create", clients: 2, total: 100000, timeout: time.Second, log: slog.New(slog.DiscardHandler),
		op: func(context.Context, int, int) error { return errors.New("connection refused") }}.run(context.Background())
	if res.Errors >= 100000 || res.Errors < maxErrors {
		t.Errorf("%d errors, want the loop to stop soon after %d", res.Errors, maxErrors)
	}
	if !strings.Contains(res.FirstError, "stopped after") || !strings.Contains(res.FirstError, "connection refused") {
		t.Errorf("first error %q does not say the loop stopped and why", res.FirstError)
	}
}

func TestLoopBoundsEachRequest(t *testing.T) {
	res := loop{name: "get", clients: 1, total: 1, timeout: 10 * time.Millisecond, log: slog.New(slog.DiscardHandler),
		op: func(ctx context.Context, _, _ int) error { <-ctx.Done(); return ctx.Err() }}.run(context.Background())
	if res.Errors != 1 || !strings.Contains(res.FirstError, "deadline") {
		t.Errorf("result %+v, want the request to time out", res)
	}
}
