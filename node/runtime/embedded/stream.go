package embedded

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"
)

// Exec runs a command in a running container with the request's
// streams attached, through the same helper as ExecSync, and returns its
// exit code: ExitCannotExec or ExitNotFound when it cannot run.
//
// Without TTY each non-nil stream gets a pipe (nil ones /dev/null), and
// the end of Stdin closes the command's stdin. Stdout and Stderr are
// written from different goroutines. With TTY the command runs on a new
// pseudo-terminal as its controlling terminal; the end of Stdin sends
// ^D, as typed, and leaves the terminal open, as runc-based runtimes
// do: a shell or cat in canonical mode takes it as end of file at the
// start of a line.
//
// Exec returns once the command exited and its output was copied; a
// background process that keeps the output open is given drainIdle of
// silence. When ctx ends first, the command is killed and Exec returns
// ctx's error.
func (r *Runtime) Exec(ctx context.Context, req cairnruntime.ExecRequest) (int, error) {
	c, st, err := r.runningContainer(req.ContainerID)
	if err != nil {
		return 0, err
	}
	if len(req.Cmd) == 0 {
		return 0, errors.New("embedded: exec needs a command")
	}
	var (
		sio  *execIO
		args []string
	)
	if req.TTY {
		sio, err = newTTYIO(req, st.PID)
		args = helper.ExecTTYArgs(r.cfg.HelperBinary, r.containerDir(c.ID), req.Cmd)
	} else {
		sio, err = newPipeIO(req)
		args = helper.ExecArgs(r.cfg.HelperBinary, r.containerDir(c.ID), req.Cmd)
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: exec in %s: %w", c.ID, err)
	}
	cmd := r.helperCmd(args)
	// Only set ones: a nil *os.File in the interface would not be nil.
	if sio.stdin != nil {
		cmd.Stdin = sio.stdin
	}
	if sio.stdout != nil {
		cmd.Stdout = sio.stdout
	}
	if sio.stderr != nil {
		cmd.Stderr = sio.stderr
	}
	if err := cmd.Start(); err != nil {
		sio.closeAll()
		return 0, fmt.Errorf("embedded: exec in %s: %w", c.ID, err)
	}
	sio.started()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		if err := sio.finish(); err != nil {
			return helper.ExitCode(cmd.ProcessState), fmt.Errorf("embedded: exec in %s: copying output: %w", c.ID, err)
		}
		return helper.ExitCode(cmd.ProcessState), nil
	case <-ctx.Done():
		if sio.master != nil {
			killTerminalSession(sio.master)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		sio.abort()
		return helper.ExitCode(cmd.ProcessState), ctx.Err()
	}
}
