package embedded

import (
	"fmt"
	"os"

	cairnruntime "cairn/node/runtime"

	"golang.org/x/sys/unix"
)

// openPTY allocates a pseudo-terminal. The master is non-blocking, so
// that Go's poller serves it: a Close then wakes a Read or Write blocked
// on it, and read deadlines work. The slave is an ordinary blocking
// file, for the exec helper to inherit; neither becomes the agent's
// controlling terminal.
func openPTY() (master, slave *os.File, err error) {
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

// setWinsize sets the terminal's size; the kernel signals SIGWINCH to
// its foreground process group when the size changes.
func setWinsize(master *os.File, size cairnruntime.TerminalSize) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
	})
}

// killTerminalSession kills, with SIGKILL, the process group of the
// session that has the terminal as its controlling one and the
// terminal's foreground process group. A command on a terminal leads a
// session of its own, out of reach of a kill of the exec helper's
// process group. Processes of the session in other groups (background
// jobs of a shell) get SIGHUP from the kernel when the session leader
// dies, and lose the terminal when the master closes.
func killTerminalSession(master *os.File) {
	own := unix.Getpgrp()
	control(master, func(fd int) error {
		for _, req := range []uint{unix.TIOCGSID, unix.TIOCGPGRP} {
			// Values from the master are the slave's, as the agent's
			// PID namespace (an ancestor of the container's) sees them.
			id, err := unix.IoctlGetUint32(fd, req)
			if err != nil || int(id) <= 1 || int(id) == own {
				continue
			}
			unix.Kill(-int(id), unix.SIGKILL)
		}
		return nil
	})
}

// control runs fn on the file's descriptor, unless the file is closed.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
