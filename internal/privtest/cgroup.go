package privtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cgroup is a cgroup v2 directory that exists for one test.
type Cgroup struct {
	// Path is the directory, under the cgroup2 mount.
	Path string
}

// NewCgroup creates a uniquely named cgroup directly under the cgroup2
// mount. At cleanup, processes still in it are killed and it is removed.
func NewCgroup(t testing.TB) *Cgroup {
	t.Helper()
	mnt := Cgroup2Mount(t)
	reapCgroups(mnt)
	var b [4]byte
	rand.Read(b[:])
	name := fmt.Sprintf("%s%d-%s-%s", cgroupPrefix, os.Getpid(), sanitize(t.Name()), hex.EncodeToString(b[:]))
	path := filepath.Join(mnt, name)
	if err := os.Mkdir(path, 0o755); err != nil {
		Unavailable(t, "cannot create a cgroup under %s: %v", mnt, err)
	}
	t.Cleanup(func() {
		if err := removeCgroup(path); err != nil {
			t.Errorf("privtest: remove cgroup %s: %v", path, err)
		}
	})
	return &Cgroup{Path: path}
}

// cgroupPrefix starts the name of every cgroup this package creates; the
// creating process's pid follows, so that cgroups left by a test binary
// that crashed (a timeout panic runs no cleanup) can be found and removed.
const cgroupPrefix = "cairn-privtest-"

// reapCgroups removes the cgroups of test processes that no longer run.
func reapCgroups(mnt string) {
	entries, _ := os.ReadDir(mnt)
	for _, e := range entries {
		if pid, ok := stalePid(e.Name(), cgroupPrefix); ok && e.IsDir() && !alive(pid) {
			removeCgroup(filepath.Join(mnt, e.Name()))
		}
	}
}

// stalePid parses the pid that follows prefix in name.
func stalePid(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// alive tells whether pid runs; a zombie, killed and not yet reaped, does
// not.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// Open returns the cgroup directory, e.g. for SysProcAttr.CgroupFD so
// that a child starts inside the cgroup. The caller closes it.
func (c *Cgroup) Open() (*os.File, error) { return os.Open(c.Path) }

// Cgroup2Mount returns the cgroup v2 mount point, or ends the test through
// Unavailable when there is none.
func Cgroup2Mount(t testing.TB) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		Unavailable(t, "cannot read mounts: %v", err)
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if pf := strings.Fields(pre); len(pf) >= 5 {
				return pf[4]
			}
		}
	}
	Unavailable(t, "no cgroup2 filesystem is mounted")
	return ""
}

// removeCgroup kills what is left in the cgroup and removes it. rmdir
// fails while a process is still exiting, hence the retries.
func removeCgroup(path string) error {
	if err := os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		killProcs(path)
	}
	var err error
	for range 100 {
		if err = syscall.Rmdir(path); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// killProcs is for kernels before 5.14, without cgroup.kill.
func killProcs(path string) {
	b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func sanitize(name string) string {
	r := strings.NewReplacer("/", "-", " ", "-", "#", "-")
	name = r.Replace(name)
	if len(name) > 40 {
		name = name[:40]
	}
	return name
}
