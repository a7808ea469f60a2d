package helper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"cairn/internal/rootfs"

	"golang.org/x/sys/unix"
)

// consoleFD is the init's end of the socket on which, for a container
// with a tty, it hands the shim the master of the terminal it made.
const consoleFD = 5

// runInit is the main of the container init: `__container-init DIR`, run
// by the shim as PID 1 of new mount, PID, UTS and IPC namespaces, with
// the go pipe as fd 3, the failure pipe as fd 4 and, with a tty, the
// console socket as fd 5. It only returns on failure: on success it
// becomes the container's command.
func runInit(args []string) int {
	if len(args) != 1 {
		return usage(initCommand, args)
	}
	fail := os.NewFile(4, "fail")
	// A successful exec closes the failure pipe, which the shim reads
	// as success.
	unix.CloseOnExec(4)
	err := containerInit(args[0], os.NewFile(3, "go"))
	fmt.Fprint(fail, err)
	return 1
}

func containerInit(dir string, goPipe *os.File) error {
	sp, err := ReadSpec(dir)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "rootfs")
	if err := setupRootfs(dir, root, &sp); err != nil {
		return err
	}
	if err := pivotRoot(root); err != nil {
		return err
	}
	if sp.TTY {
		if err := setupConsole(); err != nil {
			return err
		}
	}
	if sp.ReadonlyRootfs {
		if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("making the root filesystem read-only: %w", err)
		}
	}
	if err := unix.Sethostname([]byte(sp.Hostname)); err != nil {
		return fmt.Errorf("setting the hostname: %w", err)
	}
	// Wait until the shim has placed us in the container's cgroups.
	released, _ := io.ReadAll(goPipe)
	goPipe.Close()
	if string(released) != "go" {
		return errors.New("the shim went away before the container started")
	}
	if err := os.Chdir(sp.Cwd); err != nil {
		return fmt.Errorf("changing to the working directory %s: %w", sp.Cwd, err)
	}
	path, err := lookPathIn("/", sp.Args[0], sp.Env)
	if err != nil {
		return err
	}
	unix.Umask(0o022)
	// Credentials and capabilities are per thread in Linux: set them on
	// this thread, the one that execs.
	runtime.LockOSThread()
	if err := dropPrivileges(&sp); err != nil {
		return err
	}
	err = syscall.Exec(path, sp.Args, sp.Env)
	return fmt.Errorf("exec %s: %w", sp.Args[0], err)
}

// setupConsole makes the container's terminal in its own devpts (so the
// name the command's tty has exists in the container), makes it the
// controlling terminal of the init's session and its stdin, stdout and
// stderr, and hands the master to the shim on the console socket.
func setupConsole() error {
	sock := os.NewFile(consoleFD, "console")
	defer sock.Close()
	master, slave, err := OpenPTYAt("/dev/ptmx")
	if err != nil {
		return fmt.Errorf("making the container's terminal: %w", err)
	}
	defer master.Close()
	defer slave.Close()
	sfd := int(slave.Fd())
	if err := unix.IoctlSetInt(sfd, unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("making the terminal the controlling one: %w", err)
	}
	for fd := 0; fd <= 2; fd++ {
		if err := unix.Dup3(sfd, fd, 0); err != nil {
			return fmt.Errorf("making the terminal the init's stdio: %w", err)
		}
	}
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Sendmsg(consoleFD, []byte("t"), unix.UnixRights(int(fd)), nil, 0)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("handing the terminal to the shim: %w", serr)
	}
	return nil
}

// receiveConsole reads the terminal master the init hands over on sock;
// an error (or the init's exit, which closes sock) comes back as such.
func receiveConsole(sock *os.File) (*os.File, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if n == 0 && oobn == 0 {
		return nil, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("no terminal in the init's message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("no terminal in the init's message")
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "/dev/ptmx"), nil
}

// dropPrivileges reduces the calling thread to the container's
// capabilities and user. The caller has locked its OS thread.
func dropPrivileges(sp *Spec) error {
	if err := dropBoundingCaps(sp.Caps); err != nil {
		return err
	}
	if sp.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("setting no_new_privs: %w", err)
		}
	}
	// Raw system calls: the Go wrappers change every thread, and with
	// cgo they go through libc; only this thread matters here.
	groups := sp.Groups
	var ptr unsafe.Pointer
	if len(groups) > 0 {
		ptr = unsafe.Pointer(&groups[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), uintptr(ptr), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(sp.GID), uintptr(sp.GID), uintptr(sp.GID)); e != 0 {
		return fmt.Errorf("setresgid %d: %w", sp.GID, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(sp.UID), uintptr(sp.UID), uintptr(sp.UID)); e != 0 {
		return fmt.Errorf("setresuid %d: %w", sp.UID, e)
	}
	return nil
}

// lookPathIn finds a command in the PATH of env, in the tree at root.
func lookPathIn(root, name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		host, err := rootfs.ResolveIn(root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(host); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// pivotRoot makes root the root of the mount namespace and detaches the
// old one, so that no host path stays reachable.
func pivotRoot(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root on top of the new one,
	// where unmounting "." removes it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	return os.Chdir("/")
}
