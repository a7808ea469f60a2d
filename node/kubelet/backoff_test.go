package kubelet

import (
	"testing"
	"time"
)

func TestBackoffDoublesAndResets(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		name     string
		failedAt time.Duration // after t0
		ranFor   time.Duration
		now      time.Duration
		wantWait time.Duration
		retry    bool // call Next after the check
	}
	steps := []step{
		{name: "first failure retries at once", failedAt: 0, now: 0, wantWait: 0, retry: true},
		{name: "second failure waits the base", failedAt: 1 * time.Second, now: 1 * time.Second, wantWait: 10 * time.Second},
		{name: "part of the wait left", failedAt: 1 * time.Second, now: 7 * time.Second, wantWait: 4 * time.Second},
		{name: "wait over", failedAt: 1 * time.Second, now: 11 * time.Second, wantWait: 0, retry: true},
		{name: "third failure waits double", failedAt: 12 * time.Second, now: 12 * time.Second, wantWait: 20 * time.Second, retry: false},
		{name: "retry after 20s", failedAt: 12 * time.Second, now: 32 * time.Second, wantWait: 0, retry: true},
		{name: "fourth waits 40s", failedAt: 33 * time.Second, now: 33 * time.Second, wantWait: 40 * time.Second, retry: false},
		{name: "capped", failedAt: 33 * time.Second, now: 73 * time.Second, wantWait: 0, retry: true},
		{name: "80 is past the max of 60", failedAt: 74 * time.Second, now: 74 * time.Second, wantWait: 60 * time.Second},
		{name: "a long run resets", failedAt: 200 * time.Second, ranFor: 10 * time.Minute, now: 200 * time.Second, wantWait: 0, retry: true},
		{name: "back to the base", failedAt: 201 * time.Second, now: 201 * time.Second, wantWait: 10 * time.Second},
	}
	b := NewBackoff(10*time.Second, 60*time.Second, 10*time.Minute)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got := b.Wait("pod/c", t0.Add(st.failedAt), st.ranFor, t0.Add(st.now))
			if got != st.wantWait {
				t.Fatalf("wait = %v, want %v", got, st.wantWait)
			}
			if st.retry {
				b.Next("pod/c", st.ranFor)
			}
		})
	}
	if b.Wait("other/c", t0, 0, t0) != 0 {
		t.Error("an unknown key waits")
	}
	b.Forget("pod/")
	if b.Delay("pod/c") != 0 {
		t.Error("Forget kept the key")
	}
}
