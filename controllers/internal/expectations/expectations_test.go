package expectations

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	const key = "ns/web"
	tests := []struct {
		name string
		do   func(e *Expectations, clk *clocktesting.FakeClock)
		want bool
	}{
		{"nothing expected", func(*Expectations, *clocktesting.FakeClock) {}, true},
		{"creations outstanding", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectCreations(key, 2)
			e.CreationObserved(key)
		}, false},
		{"creations observed", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectCreations(key, 2)
			e.CreationObserved(key)
			e.CreationObserved(key)
		}, true},
		{"skipped creations lowered", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectCreations(key, 5)
			e.LowerCreations(key, 5)
		}, true},
		{"a graceful deletion counts once", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectDeletions(key, []string{"ns/a", "ns/b"})
			e.DeletionObserved(key, "ns/a")
			e.DeletionObserved(key, "ns/a")
		}, false},
		{"unexpected deletions are ignored", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectDeletions(key, []string{"ns/a"})
			e.DeletionObserved(key, "ns/other")
		}, false},
		{"all deletions observed", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.Expect(key, 1, []string{"ns/a"})
			e.DeletionObserved(key, "ns/a")
			e.CreationObserved(key)
		}, true},
		{"expired", func(e *Expectations, clk *clocktesting.FakeClock) {
			e.ExpectCreations(key, 3)
			clk.Step(TTL + time.Second)
		}, true},
		{"forgotten", func(e *Expectations, _ *clocktesting.FakeClock) {
			e.ExpectCreations(key, 3)
			e.Delete(key)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			e := New(clk)
			tt.do(e, clk)
			if got := e.Satisfied(key); got != tt.want {
				adds, dels := e.Pending(key)
				t.Fatalf("Satisfied = %v, want %v (pending %d creations, %d deletions)", got, tt.want, adds, dels)
			}
		})
	}
}
