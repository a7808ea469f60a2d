package embedded

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
)

// openPTYIn allocates a pseudo-terminal for an exec in the container
// whose main process is pid: from the container's own devpts, so that
// tools that look their terminal up by name (tty, ssh, script) find it
// there; from the host's when the container has none of its own.
func openPTYIn(pid int) (master, slave *os.File, err error) {
	if pid > 0 {
		if master, slave, err = helper.OpenPTYAt(fmt.Sprintf("/proc/%d/root/dev/pts/ptmx", pid)); err == nil {
			return master, slave, nil
		}
	}
	return helper.OpenPTY()
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
