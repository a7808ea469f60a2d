package helper

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"cairn/node/images"

	"golang.org/x/sys/unix"
)

// TestResolveInStaysInTheRoot checks the helper's copy of the image
// store's ResolveIn, and that the two agree: the agent looks users up
// with one, the container init mounts and execs with the other.
func TestResolveInStaysInTheRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"bin":        "usr/bin",
		"abs":        "/etc",
		"escape":     "../../../../etc",
		"etc/passwd": "/../../etc/shadow",
		"loop":       "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, want string
	}{
		{"/bin/sh", "usr/bin/sh"},
		{"/abs/hosts", "etc/hosts"},
		{"/escape/hosts", "etc/hosts"},
		{"/../../../etc", "etc"},
		{"/etc/passwd", "etc/shadow"},
		{"/new/dir", "new/dir"},
		{"/", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := resolveIn(root, tc.path)
			if want := filepath.Join(root, tc.want); err != nil || got != want {
				t.Errorf("resolveIn(%s) = %q, %v; want %q", tc.path, got, err, want)
			}
			if theirs, err := images.ResolveIn(root, tc.path); err != nil || theirs != got {
				t.Errorf("images.ResolveIn(%s) = %q, %v; the helper's gives %q", tc.path, theirs, err, got)
			}
		})
	}
	if _, err := resolveIn(root, "/loop/x"); !errors.Is(err, unix.ELOOP) {
		t.Errorf("resolving through a symlink loop: %v, want ELOOP", err)
	}
}

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
