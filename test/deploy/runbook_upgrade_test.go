package deploy

import (
	"testing"
	"time"
)

// TestRunbookRollingUpgrade follows docs/runbooks/rolling-upgrade.md on a
// bootstrapped cluster while kubectl writes and reads through HAProxy:
// every server restarts, and a request fails, if at all, only while a
// server goes down and comes back.
func TestRunbookRollingUpgrade(t *testing.T) {
	l := newLab(t)
	l.bootstrap(t)
	blocks := readRunbook(t, "rolling-upgrade.md")
	loop := startLoop(l.kubectl(t), "upgrade")
	t.Cleanup(loop.stopLoop)
	loop.waitSuccesses(t, time.Time{}, 4, 30*time.Second)

	begin := time.Now()
	l.run(t, blocks...)
	loop.waitSuccesses(t, time.Now(), 4, 30*time.Second)
	loop.stopLoop()

	var windows []window
	stops := map[string]time.Time{}
	for _, e := range l.unitEvents() {
		if e.unit != "cairn-server" || e.at.Before(begin) {
			continue
		}
		switch e.action {
		case "stop":
			stops[e.machine] = e.at
		case "start":
			if from, ok := stops[e.machine]; ok {
				windows = append(windows, window{from: from.Add(-100 * time.Millisecond), to: e.at.Add(retryWindow), what: "restart of " + e.machine})
			}
		}
	}
	if len(windows) != 3 {
		t.Fatalf("the runbook restarted %d servers, want 3: %v", len(windows), describeWindows(windows))
	}
	loop.checkFailures(t, windows)
	if t.Failed() {
		t.Logf("requests:\n%s", loop.report())
	}
	l.checkAllRun(t, blocks)
}
