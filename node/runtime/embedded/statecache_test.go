package embedded

import (
	"testing"

	"cairn/node/runtime/embedded/helper"
)

func TestStateCacheSeesEveryWrite(t *testing.T) {
	dir := t.TempDir()
	var c stateCache
	if _, ok, err := c.read(dir); ok || err != nil {
		t.Fatalf("before any start: ok %v, err %v; want not started", ok, err)
	}
	// Each write right after the previous one, within a clock tick.
	for i, want := range []helper.State{
		{ShimPID: 10, PID: 11, Running: true, StartedAt: 1},
		{ShimPID: 10, PID: 11, Running: true, StartedAt: 1, LogReopens: 1},
		{ShimPID: 10, PID: 11, StartedAt: 1, FinishedAt: 2, ExitCode: 0, Reason: helper.ReasonCompleted, LogReopens: 1},
	} {
		if err := helper.WriteState(dir, want); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second read comes from the cache
			got, ok, err := c.read(dir)
			if err != nil || !ok || got != want {
				t.Fatalf("write %d: read %+v (ok %v, %v), want %+v", i, got, ok, err, want)
			}
		}
	}
}

func TestStateCacheReportsACorruptFile(t *testing.T) {
	dir := t.TempDir()
	var c stateCache
	if err := helper.WriteState(dir, helper.State{Running: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.read(dir); !ok || err != nil {
		t.Fatalf("read: ok %v, %v", ok, err)
	}
	if err := helper.WriteJSON(dir+"/state.json", "not a state"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.read(dir); ok || err == nil {
		t.Errorf("corrupt state: ok %v, err %v; want an error", ok, err)
	}
}
