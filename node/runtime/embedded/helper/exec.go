package helper

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exit codes of the exec helper when the command cannot run, as shells
// use them: ExitCannotExec when it cannot run, ExitNotFound when it is
// not in the container.
const (
	ExitCannotExec = 126
	ExitNotFound   = 127
)

// runExec is the main of the exec helper: `__container-exec DIR [--tty]
// -- CMD ARG...`. It joins the running container's cgroups and its IPC,
// UTS, network and PID namespaces, then runs CMD chrooted into the
// container's root filesystem, with the container's user, environment,
// working directory and capabilities, and the helper's stdin, stdout
// and stderr, and exits with CMD's status.
//
// A Go process cannot join another mount namespace (setns refuses
// multi-threaded callers), so the command reaches the container's
// filesystem through /proc/PID/root instead, which shows the same tree,
// volumes and /proc included.
func runExec(args []string) int {
	tty := len(args) > 1 && args[1] == ttyFlag
	argv := args
	if tty {
		argv = append([]string{args[0]}, args[2:]...)
	}
	if len(argv) < 3 || argv[1] != "--" {
		return usage(execCommand, args)
	}
	code, err := execIn(argv[0], argv[2:], tty)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

func execIn(dir string, argv []string, tty bool) (int, error) {
	sp, err := ReadSpec(dir)
	if err != nil {
		return ExitCannotExec, err
	}
	st, ok, err := ReadState(dir)
	if err != nil || !ok || !st.Running || !Alive(st.PID, st.PIDStart) {
		return ExitCannotExec, fmt.Errorf("container %s is not running", sp.ID)
	}
	root := fmt.Sprintf("/proc/%d/root", st.PID)
	path, err := lookPathIn(root, argv[0], sp.Env)
	if err != nil {
		return ExitNotFound, err
	}
	if err := sp.Cgroups.AddProcess(os.Getpid()); err != nil {
		return ExitCannotExec, err
	}
	// Namespaces and capabilities are per thread: the command is forked
	// from this one.
	runtime.LockOSThread()
	for _, ns := range []struct {
		name string
		flag int
	}{{"ipc", unix.CLONE_NEWIPC}, {"uts", unix.CLONE_NEWUTS}, {"net", unix.CLONE_NEWNET}, {"pid", unix.CLONE_NEWPID}} {
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/%s", st.PID, ns.name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return ExitCannotExec, fmt.Errorf("joining the container's %s namespace: %w", ns.name, err)
		}
		err = unix.Setns(fd, ns.flag)
		unix.Close(fd)
		if err != nil {
			return ExitCannotExec, fmt.Errorf("joining the container's %s namespace: %w", ns.name, err)
		}
	}
	if err := dropBoundingCaps(sp.Caps); err != nil {
		return ExitCannotExec, err
	}
	if sp.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return ExitCannotExec, err
		}
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   argv,
		Env:    sp.Env,
		Dir:    sp.Cwd,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			// On a terminal the command leads a session of its own with
			// the terminal as its controlling one (Ctty is its stdin),
			// so that a shell runs interactively with job control and
			// ^C signals the foreground job, not the helper. It then
			// leaves the helper's process group: the agent kills its
			// session itself.
			Setsid:     tty,
			Setctty:    tty,
			Ctty:       0,
			Chroot:     root,
			Credential: &syscall.Credential{Uid: sp.UID, Gid: sp.GID, Groups: sp.Groups},
			// No parent-death signal: Go's check that the parent is
			// alive compares pids across the PID namespace boundary and
			// always fails. The agent kills the helper's process group,
			// which the command shares, instead.
		},
	}
	if err := cmd.Start(); err != nil {
		return ExitCannotExec, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	cmd.Wait()
	return ExitCode(cmd.ProcessState), nil
}
