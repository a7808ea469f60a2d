package parallelize

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestUntilCallsEveryPieceOnce(t *testing.T) {
	for _, tt := range []struct {
		name            string
		workers, pieces int
	}{
		{"serial when small", 4, 10},
		{"parallel when large", 4, 10000},
		{"one worker", 1, 1000},
		{"nothing", 2, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen := make([]atomic.Int32, tt.pieces)
			New(tt.workers).Until(context.Background(), tt.pieces, func(i int) { seen[i].Add(1) })
			for i := range seen {
				if n := seen[i].Load(); n != 1 {
					t.Fatalf("piece %d called %d times", i, n)
				}
			}
		})
	}
}

func TestUntilStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	New(2).Until(ctx, 100000, func(i int) {
		if calls.Add(1) == 10 {
			cancel()
		}
	})
	if n := calls.Load(); n >= 100000 {
		t.Fatalf("all %d pieces ran after cancel", n)
	}
}
