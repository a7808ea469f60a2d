package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxExecOutput bounds the output ExecSync keeps per stream, as the
// kubelet only reads the start of a probe's output.
const maxExecOutput = 16 << 20

// ExecSync runs a command in a running container and returns its output
// and exit code. With a timeout, a command still running then is killed
// and ExecSync fails with an error wrapping context.DeadlineExceeded.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	c, _, err := r.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if len(req.GetCmd()) == 0 {
		return nil, errors.New("embedded: ExecSync needs a command")
	}
	if t := req.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	var stdout, stderr capped
	cmd := r.helperCmd(helper.ExecArgs(r.cfg.HelperBinary, r.containerDir(c.ID), req.GetCmd()))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("embedded: exec in %s: %w", c.ID, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &timeoutError{fmt.Sprintf("embedded: exec in %s timed out after %ds", c.ID, req.GetTimeout())}
		}
		return nil, ctx.Err()
	}
	return &runtimeapi.ExecSyncResponse{
		Stdout:   stdout.Bytes(),
		Stderr:   stderr.Bytes(),
		ExitCode: int32(helper.ExitCode(cmd.ProcessState)),
	}, nil
}

// runningContainer returns the container named id if it is running.
func (r *Runtime) runningContainer(id string) (*containerRecord, helper.State, error) {
	c, err := r.container(id)
	if err != nil {
		return nil, helper.State{}, err
	}
	st, _ := r.currentState(c)
	if !st.Running {
		return nil, st, fmt.Errorf("embedded: container %s is not running", c.ID)
	}
	return c, st, nil
}

// helperCmd returns the command that runs the exec helper with args
// (from helper.ExecArgs or ExecTTYArgs), with no stdio yet. It gets a
// process group of its own, which the command joins unless it runs on a
// terminal: a kill of the group on timeout or cancellation takes both.
func (r *Runtime) helperCmd(args []string) *exec.Cmd {
	return &exec.Cmd{
		Path:        r.cfg.HelperBinary,
		Args:        args,
		Env:         helper.Env(),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
}

// capped is a buffer that keeps the first maxExecOutput bytes.
type capped struct{ bytes.Buffer }

// Write keeps what fits and drops the rest without failing, so that a
// chatty command is not killed by a broken pipe.
func (c *capped) Write(p []byte) (int, error) {
	if room := maxExecOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
