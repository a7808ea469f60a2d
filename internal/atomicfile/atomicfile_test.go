package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesTheFileWithItsModeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, tc := range []struct {
		name    string
		data    string
		perm    os.FileMode
		durable bool
	}{
		{"create", "one", 0o600, false},
		{"replace, durable", "two", 0o644, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Write(path, []byte(tc.data), tc.perm, tc.durable); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tc.data {
				t.Fatalf("read %q, %v; want %q", got, err, tc.data)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file", len(entries))
			}
		})
	}
}

func TestWriteIntoAMissingDirectoryFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "file"), []byte("x"), 0o600, false); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
