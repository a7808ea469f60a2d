package helper

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLookPathInFindsExecutablesInTheContainersPATH(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "opt/tools"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	for file, mode := range map[string]os.FileMode{"usr/bin/sh": 0o755, "opt/tools/run": 0o755, "opt/tools/data": 0o644} {
		if err := os.WriteFile(filepath.Join(root, file), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, cmd string
		env       []string
		want      string // "" for not found
	}{
		{"default PATH", "sh", nil, "/usr/bin/sh"},
		{"through a symlinked directory", "sh", []string{"PATH=/bin"}, "/bin/sh"},
		{"PATH from the environment", "run", []string{"PATH=/opt/tools"}, "/opt/tools/run"},
		{"not executable", "data", []string{"PATH=/opt/tools"}, ""},
		{"path given", "/no/such", nil, "/no/such"},
		{"missing", "nothing", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPathIn(root, tc.cmd, tc.env)
			if tc.want == "" {
				if err == nil {
					t.Errorf("lookPathIn(%s) = %q, want not found", tc.cmd, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("lookPathIn(%s) = %q, %v; want %q", tc.cmd, got, err, tc.want)
			}
		})
	}
}
