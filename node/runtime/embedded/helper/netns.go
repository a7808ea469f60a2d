package helper

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetNS runs fn on an OS thread switched into the network namespace at
// path; with an empty path it runs fn in the caller's namespace.
// Processes fn starts are born in that namespace. No other goroutine
// runs on the thread until it is back in its own namespace.
//
// It is the node network package's InNetNS, which the helper cannot
// import without the agent's netlink and iptables dependencies.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("helper: %w", err)
			return
		}
		defer unix.Close(home)
		if err = enterNetNS(path); err == nil {
			err = fn()
		}
		// A thread that cannot go home stays locked, for Go to discard
		// when the goroutine ends.
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func enterNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("helper: opening netns %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("helper: entering netns %s: %w", path, err)
	}
	return nil
}
