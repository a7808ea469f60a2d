package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScheduledSnapshotsKeepOnlyTheRetainedFiles runs a one-member cluster
// with --snapshot-interval 1s --snapshot-retention 2 until it has written
// at least three snapshot files, then checks that at most two remain in
// DATA/snapshots and that `cairn snapshot status` accepts each.
func TestScheduledSnapshotsKeepOnlyTheRetainedFiles(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pkiInit(t), "scheduled", "s1")
	c.bootstrap(t, "--snapshot-interval", "1s", "--snapshot-retention", "2")
	c.etcdctl(t, "put", "scheduled", "v")
	m := c.members[0]

	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(m.log(), "scheduled snapshot written") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 scheduled snapshots written in 20s:\n%s", m.logTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Stopped first, so no snapshot is half written or not yet pruned.
	if err := m.stop(); err != nil {
		t.Errorf("s1 did not exit cleanly on SIGTERM: %v", err)
	}

	files, err := filepath.Glob(filepath.Join(m.dataDir, "snapshots", "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(files) > 2 {
		t.Fatalf("DATA/snapshots holds %d .snap files, want 1 or 2 with --snapshot-retention 2: %v", len(files), files)
	}
	for _, f := range files {
		status := snapshotStatus(t, f)
		if status["keys"] == "0" {
			t.Errorf("%s holds no keys, but one was written before it", filepath.Base(f))
		}
	}
}
