package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestResolveInStaysInTheRoot checks that resolving follows links as if
// root were "/" and never leaves it.
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
			got, err := ResolveIn(root, tc.path)
			if want := filepath.Join(root, tc.want); err != nil || got != want {
				t.Errorf("ResolveIn(%s) = %q, %v; want %q", tc.path, got, err, want)
			}
		})
	}
	if _, err := ResolveIn(root, "/loop/x"); !errors.Is(err, unix.ELOOP) {
		t.Errorf("resolving through a symlink loop: %v, want ELOOP", err)
	}
}
