package helper

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// podInitCommand is the hidden first argument of a pod's PID namespace
// init.
const podInitCommand = "__pod-init"

// StartPodInit runs binary as the first process of a new PID namespace,
// which the containers of a pod with shareProcessNamespace join, in a
// session of its own so that it outlives the caller. The namespace
// lives as long as this process: a PID namespace whose first process
// died takes no new processes. Its diagnostics go to logPath.
func StartPodInit(binary, logPath string) (Process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Process{}, err
	}
	defer log.Close()
	cmd := &exec.Cmd{
		Path: binary, Args: []string{binary, podInitCommand}, Env: Env(), Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID},
	}
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("starting the pod's shared PID namespace: %w", err)
	}
	// Reaped here while the caller runs; after it restarts, whoever
	// adopted the process does.
	go cmd.Wait()
	start, err := ProcStartTime(cmd.Process.Pid)
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

// runPodInit is the main of a pod's PID namespace init: it reaps the
// processes of the namespace that lost their parent, until killed.
func runPodInit(args []string) int {
	if len(args) != 0 {
		return usage(podInitCommand, args)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pod init: not the first process of a PID namespace")
		return 2
	}
	exited := make(chan os.Signal, 1)
	signal.Notify(exited, syscall.SIGCHLD)
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
