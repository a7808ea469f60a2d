package privtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// bpffsPrefix names the mount points BPFFS creates, followed by the pid of
// the test process, for the same reaping as cgroups.
const bpffsPrefix = "cairn-privtest-bpffs-"

// BPFFS mounts a private bpf filesystem on a temporary directory and
// unmounts it at cleanup, which drops whatever the test pinned there.
func BPFFS(t testing.TB) string {
	t.Helper()
	Require(t, CapSysAdmin)
	reapBPFFS()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", bpffsPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		os.Remove(dir)
		Unavailable(t, "cannot mount bpffs: %v", err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("privtest: unmount bpffs %s: %v", dir, err)
		}
	})
	return dir
}

func unmount(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return err
	}
	return os.Remove(dir)
}

// reapBPFFS unmounts the bpffs mounts of test processes that no longer
// run, which also detaches the programs they pinned.
func reapBPFFS() {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var stale []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "bpf ") {
			continue
		}
		if pf := strings.Fields(pre); len(pf) >= 5 {
			if pid, ok := stalePid(filepath.Base(pf[4]), bpffsPrefix); ok && !alive(pid) {
				stale = append(stale, pf[4])
			}
		}
	}
	for _, dir := range stale {
		unmount(dir)
	}
}
