package helper

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenPTY allocates a pseudo-terminal. The master is non-blocking, so
// that Go's poller serves it: a Close then wakes a Read or Write blocked
// on it, and read deadlines work. The slave is an ordinary blocking
// file, for a child process to inherit; neither becomes the caller's
// controlling terminal. The exec helper's terminals and the terminals
// of containers created with a tty come from here.
func OpenPTY() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking the terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("finding the terminal's slave: %w", err)
	}
	path := fmt.Sprintf("/dev/pts/%d", n)
	sfd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return master, os.NewFile(uintptr(sfd), path), nil
}

// SetWinsize sets the size of the terminal whose master is given, in
// characters; the kernel signals SIGWINCH to its foreground process
// group when the size changes.
func SetWinsize(master *os.File, width, height uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: height, Col: width})
	}); err != nil {
		return err
	}
	return serr
}
