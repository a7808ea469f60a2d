package lossbench

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// netns is a network namespace made for one run. Sockets created by
// functions passed to do belong to it for their whole life.
type netns struct {
	f *os.File
}

func newNetns() (*netns, error) {
	type result struct {
		f   *os.File
		err error
	}
	res := make(chan result, 1)
	go func() {
		// This thread ends up in the new namespace: it is never unlocked,
		// so it ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			res <- result{err: fmt.Errorf("lossbench: creating a network namespace (run as root): %w", err)}
			return
		}
		f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		res <- result{f, err}
	}()
	r := <-res
	if r.err != nil {
		return nil, r.err
	}
	ns := &netns{f: r.f}
	if err := ns.do(loUp); err != nil {
		ns.close()
		return nil, err
	}
	return ns, nil
}

func (ns *netns) close() { ns.f.Close() }

// do runs f on a thread inside the namespace. Processes f starts are in
// it too.
func (ns *netns) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("lossbench: setns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// dial connects from inside the namespace.
func (ns *netns) dial(addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := ns.do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	return conn, err
}

// loUp brings up the namespace's loopback, its only interface.
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
		return fmt.Errorf("lossbench: lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lossbench: bringing lo up: %w", err)
	}
	return nil
}

// run runs a command, returning its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lossbench: %s %v: %w: %s", name, args, err, out)
	}
	return nil
}
