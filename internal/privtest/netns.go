package privtest

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace that exists for one test, with only a
// loopback interface, up. Traffic a test sends in it cannot leave the
// machine: anything but 127.0.0.0/8 and ::1 is unreachable.
type Netns struct {
	f *os.File
}

// NewNetns creates the namespace; it goes away at cleanup once the
// sockets created in it are closed.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	Require(t, CapSysAdmin, CapNetAdmin)
	f, err := newNetns()
	if err != nil {
		Unavailable(t, "cannot create a network namespace: %v", err)
	}
	n := &Netns{f: f}
	t.Cleanup(func() { f.Close() })
	if err := n.Do(loUp); err != nil {
		t.Fatalf("privtest: bring up lo in the test netns: %v", err)
	}
	return n
}

// File is the namespace handle, e.g. for a child process to join with
// setns(2). It stays owned by n.
func (n *Netns) File() *os.File { return n.f }

// Do runs f on an OS thread inside the namespace. Sockets that f creates
// belong to the namespace for their whole life, whichever goroutine uses
// them later.
func (n *Netns) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with the goroutine instead
		// of going back to the scheduler in the wrong namespace.
		runtime.LockOSThread()
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

func newNetns() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			res <- result{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		res <- result{f, err}
	}()
	r := <-res
	return r.f, r.err
}

func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
