package helper

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenPTY allocates a pseudo-terminal from the host's /dev/ptmx. The
// master is non-blocking, so that Go's poller serves it: a Close then
// wakes a Read or Write blocked on it, and read deadlines work. The slave
// is an ordinary blocking file, for a child process to inherit; neither
// becomes the caller's controlling terminal. An exec falls back to it
// when a container has no devpts of its own.
func OpenPTY() (master, slave *os.File, err error) {
	return OpenPTYAt("/dev/ptmx")
}

// OpenPTYAt is OpenPTY with the terminal taken from the devpts instance
// of the ptmx device at path: a container's own (through
// /proc/PID/root/dev/pts/ptmx), so that the name of the terminal a
// command there runs on exists in the container.
func OpenPTYAt(ptmx string) (master, slave *os.File, err error) {
	mfd, err := unix.Open(ptmx, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", ptmx, err)
	}
	master = os.NewFile(uintptr(mfd), ptmx)
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking the terminal: %w", err)
	}
	// The peer of this master, whichever devpts instance it is in, with
	// no lookup of its name.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		master.Close()
		return nil, nil, fmt.Errorf("opening the terminal's slave: %w", errno)
	}
	return master, os.NewFile(sfd, ptmx+" (slave)"), nil
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
