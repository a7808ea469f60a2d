package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// NewNetNS creates a network namespace and keeps it alive by bind
// mounting it on path (like `ip netns add`), so that it outlives every
// process in it, including the agent. The namespace starts empty, with
// its loopback device down.
func NewNetNS(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("network: creating netns %s: %w", path, err)
	}
	f.Close()
	err = onThreadIn(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("network: unshare: %w", err)
		}
		return nil
	}, func() error {
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("network: bind mounting netns on %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. The
// namespace itself goes away with its last process. A missing path is
// not an error.
func RemoveNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("network: unmounting netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network: %w", err)
	}
	return nil
}

// IsNetNS reports whether path is a mounted network namespace, as after
// an agent restart, while it is lost after a reboot.
func IsNetNS(path string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false
	}
	return fs.Type == unix.NSFS_MAGIC
}

// InNetNS runs fn on an OS thread switched into the network namespace at
// path; with an empty path it runs fn in the caller's namespace. Sockets
// fn opens stay in that namespace, and processes it starts are born in
// it. No other goroutine runs on the thread until it is back in its own
// namespace.
func InNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	return onThreadIn(func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("network: opening netns %s: %w", path, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("network: entering netns %s: %w", path, err)
		}
		return nil
	}, fn)
}

// onThreadIn runs fn on a locked OS thread that enter has moved into
// another network namespace. The thread then goes back to its own
// namespace and to Go's pool; only if it cannot is it left locked, for Go
// to discard when the goroutine ends. Discarding threads as a habit is
// not harmless: a child started with Pdeathsig is killed when the thread
// that forked it exits, whichever goroutine forked it.
func onThreadIn(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: %w", err)
			return
		}
		defer unix.Close(home)
		if err = enter(); err == nil {
			err = fn()
		}
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
