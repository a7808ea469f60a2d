package volumes

import (
	"os"
	"path/filepath"
	"testing"

	"cairn/internal/privtest"

	"golang.org/x/sys/unix"
)

// TestIsMountPoint checks statx's answer against mountinfo's, for a
// tmpfs, a directory on it and one beside it, and that mountTmpfs does
// not stack a second tmpfs on the first.
func TestIsMountPoint(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin)
	dir := t.TempDir()
	mnt, plain := filepath.Join(dir, "mnt"), filepath.Join(dir, "plain")
	for _, d := range []string{mnt, plain} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := mountTmpfs(mnt, 1<<20, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	inside := filepath.Join(mnt, "sub")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{mnt: true, plain: false, inside: false, dir: false} {
		got, err := isMountPoint(path)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := inMountinfo(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || listed != want {
			t.Errorf("%s: isMountPoint %v, in mountinfo %v; want %v", path, got, listed, want)
		}
	}
	if _, err := isMountPoint(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a missing directory: got %v, want not-exist", err)
	}

	// A second call finds the tmpfs and mounts nothing.
	if err := mountTmpfs(mnt, 1<<20, 0o755); err != nil {
		t.Fatal(err)
	}
	points, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range points {
		if p == mnt {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s is mounted %d times after two mountTmpfs, want once", mnt, n)
	}
}
