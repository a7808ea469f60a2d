package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPKIInitWritesCAAndAdminCertAndRefusesToOverwrite checks that `cairn
// pki init` creates the CA and admin credentials, and that running it again
// on the same dir is refused without touching them: replacing a cluster's
// CA would lock every member out.
func TestPKIInitWritesCAAndAdminCertAndRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	mustRun(t, "pki", "init", "--dir", dir)

	files := []string{"ca.crt", "ca.key", "admin.crt", "admin.key"}
	before := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("pki init did not write %s: %v", name, err)
		}
		if !bytes.Contains(b, []byte("-----BEGIN ")) {
			t.Errorf("%s is not PEM:\n%s", name, b)
		}
		before[name] = b
	}

	runRefused(t, []string{"already holds a CA", "--dir"}, "pki", "init", "--dir", dir)
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, before[name]) {
			t.Errorf("the refused second pki init changed %s", name)
		}
	}
}
