// Package nsthread runs code on an OS thread switched into another
// network or IPC namespace, and makes such namespaces outlive their
// processes. It imports only the standard library and x/sys/unix, so
// that the runtime's small helper binary can use it too.
package nsthread

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Kind is a kind of namespace a thread is switched into.
type Kind struct {
	name string // as in /proc/PID/ns/NAME
	flag int    // its CLONE_NEW* flag
}

// The kinds of namespace this package handles: both are per thread, and
// a thread may enter them while others run Go code.
var (
	Net = Kind{"net", unix.CLONE_NEWNET}
	IPC = Kind{"ipc", unix.CLONE_NEWIPC}
)

// Run runs fn on an OS thread switched into the network namespace at
// path; with an empty path it runs fn in the caller's namespace. Sockets
// fn opens stay in that namespace, and processes it starts are born in
// it. No other goroutine runs on the thread until it is back in its own
// namespace.
func Run(path string, fn func() error) error { return RunIn(Net, path, fn) }

// RunIn is Run for a namespace of kind k.
func RunIn(k Kind, path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	return OnKind(k, func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("nsthread: opening %s namespace %s: %w", k.name, path, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, k.flag); err != nil {
			return fmt.Errorf("nsthread: entering %s namespace %s: %w", k.name, path, err)
		}
		return nil
	}, fn)
}

// On runs fn on a locked OS thread that enter has moved into another
// network namespace. The thread then goes back to its own namespace and
// to Go's pool; only if it cannot is it left locked, for Go to discard
// when the goroutine ends. Discarding threads as a habit is not
// harmless: a child started with Pdeathsig is killed when the thread
// that forked it exits, whichever goroutine forked it.
func On(enter, fn func() error) error { return OnKind(Net, enter, fn) }

// OnKind is On for a namespace of kind k.
func OnKind(k Kind, enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/"+k.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("nsthread: %w", err)
			return
		}
		defer unix.Close(home)
		if err = enter(); err == nil {
			err = fn()
		}
		if unix.Setns(home, k.flag) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// New makes a namespace of kind k that outlives its processes: it is
// bind mounted on path, a file it creates, until Remove.
func New(k Kind, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("nsthread: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("nsthread: creating %s namespace %s: %w", k.name, path, err)
	}
	f.Close()
	err = OnKind(k, func() error {
		if err := unix.Unshare(k.flag); err != nil {
			return fmt.Errorf("nsthread: unshare: %w", err)
		}
		return nil
	}, func() error {
		self := fmt.Sprintf("/proc/self/task/%d/ns/%s", unix.Gettid(), k.name)
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("nsthread: bind mounting %s namespace on %s: %w", k.name, path, err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// Remove unmounts and deletes a namespace made by New. The namespace
// itself goes away with its last process. A missing path is not an
// error.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("nsthread: unmounting namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("nsthread: %w", err)
	}
	return nil
}

// IsNamespace reports whether path is a mounted namespace, as after an
// agent restart, while it is lost after a reboot.
func IsNamespace(path string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false
	}
	return fs.Type == unix.NSFS_MAGIC
}
