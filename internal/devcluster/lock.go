package devcluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// machineLock is held by the supervisor of the cluster that owns the
// host's fixed names (bridge, namespaces, cgroups), whatever its state
// directory.
const machineLock = "/run/cairn-dev.lock"

// lockHolder is who holds a lock: the pid and state directory it wrote.
type lockHolder struct {
	PID int
	Dir string
}

// errLocked is returned when another process holds a lock.
type errLocked struct{ holder lockHolder }

// Error implements error.
func (e *errLocked) Error() string {
	return fmt.Sprintf("devcluster: locked by pid %d (state dir %s)", e.holder.PID, e.holder.Dir)
}

// tryLock takes an exclusive flock on path without waiting and records
// this process and dir in it. The lock is released by closing the file,
// or when the process dies.
func tryLock(path, dir string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		raw, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &errLocked{holder: parseHolder(string(raw))}
		}
		return nil, fmt.Errorf("devcluster: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(fmt.Sprintf("%d\n%s\n", os.Getpid(), dir)), 0)
	}
	return f, nil
}

func parseHolder(s string) lockHolder {
	pid, dir, _ := strings.Cut(strings.TrimSpace(s), "\n")
	n, _ := strconv.Atoi(pid)
	return lockHolder{PID: n, Dir: dir}
}
