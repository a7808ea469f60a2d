package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunbooksFollowTheConventions reads every runbook: each sh block says
// which machines it runs on and touches only the paths the lab maps, and
// each runbook has a test that runs it.
func TestRunbooksFollowTheConventions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot(t), "docs", "runbooks")
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	tests, _ := filepath.Glob("runbook_*_test.go")
	for _, f := range tests {
		for _, line := range strings.Split(readFileString(t, f), "\n") {
			if i := strings.Index(line, `readRunbook(t, "`); i >= 0 {
				name, _, _ := strings.Cut(line[i+len(`readRunbook(t, "`):], `"`)
				tested[name] = true
			}
		}
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseRunbook(name, string(data))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				if bad := unmappedPaths(b.text); len(bad) > 0 {
					t.Errorf("%s uses %v: use only paths under %v, which the tests map to a machine's root", b, bad, hostPaths())
				}
			}
			if name != "README.md" && len(blocks) > 0 && !tested[name] {
				t.Errorf("no runbook_*_test.go runs %s", name)
			}
		})
	}
}
