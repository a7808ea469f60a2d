package devcluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"cairn/internal/nsthread"
)

// child is a server or agent the supervisor started.
type child struct {
	name, kind, log string
	cmd             *exec.Cmd
	start           uint64
	// done is closed once the process has exited and err is set.
	done chan struct{}
	err  error

	mu       sync.Mutex
	stopping bool
}

// startChild runs bin with args as a child named name, its output
// appended to logPath, in the network namespace at netns ("" for the
// supervisor's own). The child gets a process group of its own, so that
// the terminal's Ctrl-C reaches only the supervisor, which stops the
// children in order. onExit is called, unless the supervisor is stopping
// the child, when it exits.
func startChild(bin, name, kind, logPath, netns string, args []string, onExit func(*child)) (*child, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "\n=== cairn dev: starting %s at %s: %s %s\n", name, time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The child is born in the namespace of the thread that forks it.
	if err := nsthread.Run(netns, cmd.Start); err != nil {
		return nil, fmt.Errorf("devcluster: starting %s: %w", name, err)
	}
	c := &child{name: name, kind: kind, log: logPath, cmd: cmd, start: startTimeOf(cmd.Process.Pid), done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
		c.mu.Lock()
		stopping := c.stopping
		c.mu.Unlock()
		if !stopping && onExit != nil {
			onExit(c)
		}
	}()
	return c, nil
}

// childEnv drops the CAIRN_* variables, which would set flags of the
// children's commands that `cairn dev` means to leave at their defaults.
func childEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "CAIRN_") {
			out = append(out, e)
		}
	}
	return out
}

// process describes the child for the run state.
func (c *child) process() Process {
	return Process{Name: c.name, Kind: c.kind, PID: c.cmd.Process.Pid, StartTime: c.start, Log: c.log}
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// exitStatus describes how the child ended.
func (c *child) exitStatus() string {
	if c.err == nil {
		return "exit status 0"
	}
	return c.err.Error()
}

// stopChildren sends SIGTERM to the children and waits up to grace for
// them all, then kills those left. Closing force kills them at once.
func stopChildren(children []*child, grace time.Duration, force <-chan struct{}, out io.Writer) {
	for _, c := range children {
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		if !c.exited() {
			c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, c := range children {
		select {
		case <-c.done:
			continue
		case <-timer.C:
		case <-force:
		}
		for _, k := range children {
			if !k.exited() {
				fmt.Fprintf(out, "  %s did not stop in time: killing it\n", k.name)
				k.cmd.Process.Kill()
			}
		}
		for _, k := range children {
			<-k.done
		}
		return
	}
}
