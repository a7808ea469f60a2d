package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// shimReport is the one message a shim sends the agent, on its fd 3,
// once the container runs or failed to start.
type shimReport struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// StartShim runs binary as the shim of the container whose state is in
// dir, in its own session so that it outlives the caller, and waits for
// its report: it returns the pid of the container's process once its
// command runs, or why it failed to start. The agent calls it.
func StartShim(ctx context.Context, binary, dir string) (int, error) {
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer reportR.Close()
	shimLog, err := os.OpenFile(filepath.Join(dir, "shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		reportW.Close()
		return 0, err
	}
	cmd := &exec.Cmd{
		Path:        binary,
		Args:        []string{binary, shimCommand, dir},
		Env:         Env(),
		Stdout:      shimLog,
		Stderr:      shimLog,
		ExtraFiles:  []*os.File{reportW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	reportW.Close()
	shimLog.Close()
	if err != nil {
		return 0, fmt.Errorf("running the shim: %w", err)
	}
	// Reap the shim if it exits while we run; after an agent restart,
	// whoever adopted it does.
	go cmd.Wait()
	got := make(chan shimReport, 1)
	go func() {
		var rep shimReport
		if err := json.NewDecoder(reportR).Decode(&rep); err != nil {
			logPath := filepath.Join(dir, "shim.log")
			rep.Error = fmt.Sprintf("the shim exited without a report (%v)%s; see %s", err, shimLogCause(logPath), logPath)
		}
		got <- rep
	}()
	select {
	case rep := <-got:
		if rep.Error != "" {
			return 0, errors.New(rep.Error)
		}
		return rep.PID, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// shimLogCause is what the shim's log says of why it died, as ": cause",
// or "": the first line of a panic or fatal error, else its last line.
func shimLogCause(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	cause := lines[len(lines)-1]
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			cause = l
			break
		}
	}
	if cause == "" {
		return ""
	}
	return ": " + cause
}
