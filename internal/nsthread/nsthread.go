// Package nsthread runs code on an OS thread switched into another
// network namespace. It imports only the standard library and
// x/sys/unix, so that the runtime's small helper binary can use it too.
package nsthread

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Run runs fn on an OS thread switched into the network namespace at
// path; with an empty path it runs fn in the caller's namespace. Sockets
// fn opens stay in that namespace, and processes it starts are born in
// it. No other goroutine runs on the thread until it is back in its own
// namespace.
func Run(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	return On(func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("nsthread: opening netns %s: %w", path, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("nsthread: entering netns %s: %w", path, err)
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
func On(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("nsthread: %w", err)
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
