package prober

import "testing"

func TestTrackerThresholds(t *testing.T) {
	S, F := Success, Failure
	tests := []struct {
		name             string
		start            Result
		success, failure int32
		attempts         []Result
		want             []Result // reported after each attempt
	}{
		{name: "readiness needs one success", start: F, success: 1, failure: 3,
			attempts: []Result{S, S}, want: []Result{S, S}},
		{name: "three failures to fail", start: S, success: 1, failure: 3,
			attempts: []Result{F, F, F, F}, want: []Result{S, S, F, F}},
		{name: "a success resets the failure run", start: S, success: 1, failure: 2,
			attempts: []Result{F, S, F, F}, want: []Result{S, S, S, F}},
		{name: "two successes to recover", start: F, success: 2, failure: 1,
			attempts: []Result{S, F, S, S}, want: []Result{F, F, F, S}},
		{name: "zero thresholds mean one", start: Unknown, success: 0, failure: 0,
			attempts: []Result{F, S}, want: []Result{F, S}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tracker{result: tt.start}
			for i, a := range tt.attempts {
				got, changed := tr.observe(a, tt.success, tt.failure)
				if got != tt.want[i] {
					t.Fatalf("attempt %d (%v): reported %v, want %v", i, a, got, tt.want[i])
				}
				prev := tt.start
				if i > 0 {
					prev = tt.want[i-1]
				}
				if changed != (prev != got) {
					t.Fatalf("attempt %d: changed = %v", i, changed)
				}
			}
		})
	}
}

func TestKindInitialResults(t *testing.T) {
	for _, tt := range []struct {
		k    Kind
		want Result
	}{{Liveness, Success}, {Readiness, Failure}, {Startup, Unknown}} {
		t.Run(tt.k.String(), func(t *testing.T) {
			if got := tt.k.initial(); got != tt.want {
				t.Errorf("initial = %v, want %v", got, tt.want)
			}
		})
	}
}
