package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DownConfig configures Down.
type DownConfig struct {
	// Dir is the state directory of the cluster to stop.
	Dir string
	// Out receives progress for the user; Logger diagnostics.
	Out    io.Writer
	Logger *slog.Logger
	// Timeout bounds the wait for the supervisor's own orderly stop,
	// after which it is killed and the sweep done here; 90s if zero.
	Timeout time.Duration
}

// Down stops the cluster of a state directory from another process: it
// asks the supervisor to stop (which stops the agents, then the servers,
// and sweeps the host), waits for it, then kills and sweeps whatever is
// left, also after a supervisor that crashed. The data stays.
func Down(ctx context.Context, cfg DownConfig) error {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 90 * time.Second
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	l := Layout{Dir: dir}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("devcluster: no cluster in %s", dir)
	}
	if err := stopSupervisor(ctx, cfg, l); err != nil {
		return err
	}
	lock, err := lockWait(ctx, l.Lock(), dir, 5*time.Second)
	if err != nil {
		return err
	}
	defer lock.Close()
	st, err := ReadRunState(dir)
	if err != nil {
		return err
	}
	host := false
	if nodesUnavailable() == "" {
		machine, err := tryLock(machineLock, dir)
		var locked *errLocked
		switch {
		case errors.As(err, &locked):
			fmt.Fprintf(cfg.Out, "Another cairn dev cluster (state in %s) owns the host's namespaces and bridge: leaving them alone.\n", locked.holder.Dir)
		case err != nil:
			return err
		default:
			defer machine.Close()
			host = true
		}
	}
	if st != nil {
		stopOrphans(st.Processes, stopGrace)
		if err := restoreIPForward(st.IPForwardWas); err != nil {
			fmt.Fprintln(cfg.Out, err)
		}
	}
	sweepErr := sweep(l, host, cfg.Logger)
	os.Remove(l.RunState())
	// A supervisor killed with -9 leaves its socket.
	os.Remove(l.Control())
	if sweepErr != nil {
		return sweepErr
	}
	fmt.Fprintf(cfg.Out, "Stopped. The data stays in %s.\n", dir)
	return nil
}

// stopSupervisor asks the supervisor of the state directory to stop and
// waits for it, killing it after cfg.Timeout. The supervisor is the one
// the run state names or, early in its start before it wrote one, the
// holder of the directory's lock.
func stopSupervisor(ctx context.Context, cfg DownConfig, l Layout) error {
	st, err := ReadRunState(l.Dir)
	if err != nil {
		return err
	}
	pid, running := 0, func() bool { return false }
	if st != nil && st.SupervisorRunning() {
		pid, running = st.PID, st.SupervisorRunning
	} else if f, err := tryLock(l.Lock(), l.Dir); err == nil {
		f.Close()
	} else {
		var locked *errLocked
		if !errors.As(err, &locked) || locked.holder.PID <= 0 {
			return err
		}
		start := startTimeOf(locked.holder.PID)
		pid, running = locked.holder.PID, func() bool { return sameProcess(locked.holder.PID, start) }
	}
	if pid == 0 || !running() {
		return nil
	}
	fmt.Fprintf(cfg.Out, "Stopping the cluster in %s (cairn dev, pid %d)...\n", l.Dir, pid)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("devcluster: signalling pid %d: %w", pid, err)
	}
	if !waitGone(ctx, running, cfg.Timeout) {
		fmt.Fprintf(cfg.Out, "It did not stop within %s: killing it and cleaning up here.\n", cfg.Timeout)
		syscall.Kill(pid, syscall.SIGKILL)
		waitGone(ctx, running, 5*time.Second)
	}
	return nil
}

// waitGone polls running until it is false, for at most timeout.
func waitGone(ctx context.Context, running func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for running() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// lockWait takes the lock at path, waiting up to timeout for a holder
// that is finishing.
func lockWait(ctx context.Context, path, dir string, timeout time.Duration) (*os.File, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := tryLock(path, dir)
		var locked *errLocked
		if !errors.As(err, &locked) {
			return f, err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("devcluster: %s is still held by pid %d: is `cairn dev` starting again there?", path, locked.holder.PID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
