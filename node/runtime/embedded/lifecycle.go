package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Timeouts of the container lifecycle.
const (
	// shimStartTimeout bounds a container start when the caller's
	// context has no deadline.
	shimStartTimeout = 30 * time.Second
	// killWait bounds the wait for a SIGKILLed container to be reaped.
	killWait = 10 * time.Second
	// reopenTimeout bounds the wait for a shim to reopen its log.
	reopenTimeout = 5 * time.Second
	// pollInterval is how often state files are polled.
	pollInterval = 20 * time.Millisecond
)

// StartContainer starts a created container under a new shim and
// returns once its command runs (or failed to start).
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	c, err := r.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	dir := r.containerDir(c.ID)
	if _, started, err := helper.ReadState(dir); err != nil || started {
		return nil, fmt.Errorf("embedded: container %s was already started: containers start once (%v)", c.ID, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, shimStartTimeout)
		defer cancel()
	}
	pid, err := helper.StartShim(ctx, r.cfg.ShimBinary, dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: starting container %s: %w", c.ID, err)
	}
	r.log.Info("container started", "id", c.ID, "pid", pid)
	return &runtimeapi.StartContainerResponse{}, nil
}

// currentState returns a container's process state, noticing a shim
// that died without recording the exit (killed, or lost in a reboot).
func (r *Runtime) currentState(c *containerRecord) (helper.State, bool) {
	dir := r.containerDir(c.ID)
	st, started, err := c.state.read(dir)
	if err != nil || !started || !st.Running || c.shim.alive(st.ShimPID, st.ShimStart) {
		return st, started
	}
	// Read again: the shim may have written the exit just before going.
	if st, _, err = helper.ReadState(dir); err != nil || !st.Running {
		return st, true
	}
	if helper.Alive(st.PID, st.PIDStart) {
		return st, true // unsupervised, but running
	}
	st.Running, st.FinishedAt, st.ExitCode = false, r.now().UnixNano(), 255
	st.Reason, st.Message = helper.ReasonUnknown, "the container's shim exited before recording the container's exit"
	if err := helper.WriteState(dir, st); err != nil {
		r.log.Warn("recording a lost container", "id", c.ID, "err", err)
	}
	return st, true
}

// signalProcess sends sig to the container's main process, if it is still the
// process that was started (never to a process that reused its pid).
func signalProcess(st helper.State, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(st.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	if !helper.Alive(st.PID, st.PIDStart) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}

// waitExited polls until the container has exited, up to timeout.
func (r *Runtime) waitExited(ctx context.Context, c *containerRecord, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if st, _ := r.currentState(c); !st.Running {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// StopContainer asks the container to stop with its stop signal
// (SIGTERM by default) and SIGKILLs it after the timeout (at once for a
// zero timeout). Stopping a stopped container succeeds.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	c, err := r.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if err := r.stopContainer(ctx, c, time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *Runtime) stopContainer(ctx context.Context, c *containerRecord, timeout time.Duration) error {
	st, _ := r.currentState(c)
	if !st.Running {
		return nil
	}
	if timeout > 0 {
		sp, err := r.spec(c)
		if err != nil {
			return err
		}
		sig := syscall.Signal(sp.StopSignal)
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		if err := signalProcess(st, sig); err != nil {
			return fmt.Errorf("embedded: signalling container %s: %w", c.ID, err)
		}
		if r.waitExited(ctx, c, timeout) {
			r.log.Info("container stopped", "id", c.ID, "signal", unix.SignalName(sig))
			return nil
		}
	}
	if err := signalProcess(st, syscall.SIGKILL); err != nil {
		return fmt.Errorf("embedded: killing container %s: %w", c.ID, err)
	}
	// The kill cannot be refused, so wait for it even if the caller's
	// context is done: returning early would report a running container
	// as stopped.
	if !r.waitExited(context.Background(), c, killWait) {
		return fmt.Errorf("embedded: container %s still runs %s after SIGKILL", c.ID, killWait)
	}
	r.log.Info("container killed", "id", c.ID)
	return nil
}

// ReopenContainerLog makes the container's shim reopen its log file,
// after the kubelet rotated it, and waits until it did.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	c, err := r.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	st, _ := r.currentState(c)
	if !st.Running || !helper.Alive(st.ShimPID, st.ShimStart) {
		return nil, fmt.Errorf("embedded: container %s is not running: no log to reopen", c.ID)
	}
	dir := r.containerDir(c.ID)
	err = helper.ReopenLog(ctx, dir)
	if err == nil {
		if now, _, err := helper.ReadState(dir); err == nil && now.LogReopens > st.LogReopens {
			return &runtimeapi.ReopenContainerLogResponse{}, nil
		}
		// A shim from before the request attached us instead: it
		// reopens on SIGUSR1.
	} else if !errors.Is(err, helper.ErrNoAttachSocket) {
		return nil, fmt.Errorf("embedded: the shim of %s could not reopen its log: %w", c.ID, err)
	} else if st.SocketReopenOnly {
		return nil, fmt.Errorf("embedded: the shim of %s lost its attach socket %s, the only way to ask it to reopen its log: restart the container to rotate its log",
			c.ID, filepath.Join(dir, helper.AttachSocket))
	}
	// Shims from before the socket, and those that could not make it,
	// reopen on SIGUSR1.
	if err := signalProcess(helper.State{PID: st.ShimPID, PIDStart: st.ShimStart}, syscall.SIGUSR1); err != nil {
		return nil, fmt.Errorf("embedded: asking the shim of %s to reopen its log: %w", c.ID, err)
	}
	deadline := time.Now().Add(reopenTimeout)
	for {
		now, _, err := helper.ReadState(dir)
		if err == nil && now.LogReopens > st.LogReopens {
			return &runtimeapi.ReopenContainerLogResponse{}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("embedded: the shim of %s did not reopen its log", c.ID)
		}
		time.Sleep(pollInterval)
	}
}
