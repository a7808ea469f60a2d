package helper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// podInitCommand is the hidden first argument of a pod's PID namespace
// init.
const podInitCommand = "__pod-init"

// podInitUID is the user the init runs as once set up, with no
// capabilities: the nobody of Kubernetes' pause image.
const podInitUID = 65535

// StartPodInit runs binary as the first process of a new PID namespace,
// which the containers of a pod with shareProcessNamespace join, in a
// session of its own so that it outlives the caller. The namespace
// lives as long as this process: a PID namespace whose first process
// died takes no new processes. The pod's containers see it as PID 1,
// and so reach its root and files through /proc/1: it chroots into
// root, an empty directory, and drops its privileges before it reports
// ready. Its diagnostics go to logPath.
func StartPodInit(binary, root, logPath string) (Process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Process{}, err
	}
	defer log.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return Process{}, err
	}
	defer readyR.Close()
	cmd := &exec.Cmd{
		Path: binary, Args: []string{binary, podInitCommand, root}, Env: Env(), Stdout: log, Stderr: log,
		ExtraFiles:  []*os.File{readyW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID},
	}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return Process{}, fmt.Errorf("starting the pod's shared PID namespace: %w", err)
	}
	// Reaped here while the caller runs; after it restarts, whoever
	// adopted the process does.
	go cmd.Wait()
	// Ready first: an init that said so lives until SIGKILL, so its
	// start time can be read; one that exited may be a zombie or gone.
	var b [1]byte
	var start uint64
	if _, err = io.ReadFull(readyR, b[:]); err != nil {
		err = fmt.Errorf("it exited before it was ready (%v)%s; see %s", err, shimLogCause(logPath), logPath)
	} else {
		start, err = ProcStartTime(cmd.Process.Pid)
	}
	if err != nil {
		cmd.Process.Kill()
		return Process{}, fmt.Errorf("starting the pod's shared PID namespace: %w", err)
	}
	return Process{PID: cmd.Process.Pid, Start: start}, nil
}

// StopPodInit kills a pod's PID namespace init, which kills whatever
// still runs in the namespace, and waits until it is gone.
func StopPodInit(p Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for Alive(p.PID, p.Start) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pod's PID namespace init %d survives SIGKILL", p.PID)
		}
		syscall.Kill(p.PID, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// runPodInit is the main of a pod's PID namespace init, `__pod-init
// ROOT` with its ready pipe as fd 3: it reaps the processes of the
// namespace that lost their parent until SIGKILL, which only the agent,
// from outside the namespace, can send it.
func runPodInit(args []string) int {
	if len(args) != 1 {
		return usage(podInitCommand, args)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pod init: not the first process of a PID namespace")
		return 2
	}
	ready := os.NewFile(3, "ready")
	unix.CloseOnExec(3)
	// The pod's processes may signal their PID 1, which gets only the
	// signals it handles: none but SIGCHLD, so that no kill from inside
	// ends the namespace. SIGURG stays the Go runtime's.
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		if sig != syscall.SIGCHLD && sig != syscall.SIGURG && sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
			signal.Ignore(sig)
		}
	}
	exited := make(chan os.Signal, 1)
	signal.Notify(exited, syscall.SIGCHLD)
	if err := confine(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "pod init:", err)
		return 1
	}
	ready.Write([]byte{1})
	ready.Close()
	for {
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		<-exited
	}
}

// confine leaves the init nothing of the host that the pod's processes
// could reach through /proc/1: its root and working directory become the
// empty root, its stdio /dev/null, and it keeps no privileges.
func confine(root string) error {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot %s: %w", root, err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	// Go sets these on every thread; leaving root clears the threads'
	// capabilities.
	if err := errors.Join(syscall.Setgroups(nil), syscall.Setgid(podInitUID), syscall.Setuid(podInitUID)); err != nil {
		return fmt.Errorf("dropping privileges: %w", err)
	}
	// Last, so that the errors above reach the log.
	for fd := 0; fd < 3; fd++ {
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}
