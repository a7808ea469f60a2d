package helper

import (
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/privtest"
)

// TestAPodInitThatDoesNotStartIsAnError covers a helper binary that
// does not know the pod init (one older than the agent): the sandbox
// must fail, not run with a dead init.
func TestAPodInitThatDoesNotStartIsAnError(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin)
	dir := t.TempDir()
	_, err := StartPodInit("/bin/true", dir, filepath.Join(dir, "pod-init.log"))
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("StartPodInit of a binary that exits: %v, want an error saying so", err)
	}
}
