package storebench

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadCountsRequestsAndErrors(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name       string
		workers    int
		total      int
		duration   time.Duration
		failEvery  int64
		wantOps    int
		wantErrors int
		wantErr    string
	}{
		{name: "total is exact across workers", workers: 8, total: 1000, wantOps: 1000},
		{name: "one worker", workers: 1, total: 10, wantOps: 10},
		{name: "errors are counted, not timed", workers: 4, total: 100, failEvery: 4, wantOps: 75, wantErrors: 25},
		{name: "a broken cluster gives up", workers: 2, total: 10 * maxErrors, failEvery: 1, wantErr: "gave up after"},
		{name: "duration bounds the run", workers: 2, duration: 50 * time.Millisecond, wantOps: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			res, err := load{
				name:     "fake",
				workers:  tt.workers,
				total:    tt.total,
				duration: tt.duration,
				op: func(context.Context, int, *rand.Rand) error {
					if i := n.Add(1); tt.failEvery > 0 && i%tt.failEvery == 0 {
						return errBoom
					}
					time.Sleep(10 * time.Microsecond)
					return nil
				},
			}.run(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || res.FirstError != "boom" {
					t.Fatalf("run = %+v, %v; want error %q after boom", res, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if tt.wantOps >= 0 && (res.Ops != tt.wantOps || res.Errors != tt.wantErrors) {
				t.Errorf("ops, errors = %d, %d; want %d, %d", res.Ops, res.Errors, tt.wantOps, tt.wantErrors)
			}
			if res.Ops == 0 || res.Throughput <= 0 || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 {
				t.Errorf("implausible result %+v", res)
			}
			if tt.duration > 0 && (res.Elapsed < tt.duration || res.Elapsed > tt.duration+time.Second) {
				t.Errorf("elapsed %v for a %v run", res.Elapsed, tt.duration)
			}
		})
	}
}

func TestLoadStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := load{name: "fake", workers: 2, duration: time.Hour, op: func(ctx context.Context, _ int, _ *rand.Rand) error {
		<-ctx.Done()
		return ctx.Err()
	}}.run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("run error = %v, want context.Canceled", err)
	}
}
