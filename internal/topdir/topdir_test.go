package topdir

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMarkSetsTheFlagWhereTheFilesystemHasIt(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.EXT4_SUPER_MAGIC {
		t.Skipf("the test directory is not on ext4 (magic %#x): the flag is only a hint there", st.Type)
	}
	if marked, err := Marked(dir); err != nil || marked {
		t.Fatalf("a new directory: marked %v, err %v", marked, err)
	}
	for range 2 { // marking twice is harmless
		if err := Mark(dir); err != nil {
			t.Fatal(err)
		}
	}
	if marked, err := Marked(dir); err != nil || !marked {
		t.Fatalf("after Mark: marked %v, err %v", marked, err)
	}
	// Subdirectories do not inherit it.
	sub := filepath.Join(dir, "c1")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if marked, err := Marked(sub); err != nil || marked {
		t.Fatalf("a subdirectory: marked %v, err %v", marked, err)
	}
}

func TestMarkIgnoresFilesystemsWithoutFlags(t *testing.T) {
	// /proc has no inode flags.
	if err := Mark("/proc/self"); err != nil {
		t.Fatalf("Mark on procfs: %v", err)
	}
}

func TestMarkReportsAMissingDirectory(t *testing.T) {
	if err := Mark(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("Mark of a missing directory succeeded")
	}
}
