package linearizability

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverBinary returns CAIRN_BIN, or builds the server into a temp dir.
func serverBinary(t *testing.T) string {
	if bin := os.Getenv("CAIRN_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("CAIRN_BIN=%s: %v (build it with `go build -o bin/cairn ./cmd/cairn`)", bin, err)
		}
		return bin
	}
	// `go test` puts its own go first in PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("CAIRN_BIN is not set and there is no go tool to build cairn with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "cairn")
	t.Logf("CAIRN_BIN is not set: building %s", bin)
	out, err := exec.Command(goTool, "build", "-o", bin, "cairn/cmd/cairn").CombinedOutput()
	if err != nil {
		t.Fatalf("building cairn (set CAIRN_BIN to use a built one): %v\n%s", err, out)
	}
	return bin
}

// member is one `cairn server` process, restartable on the same data dir.
type member struct {
	name      string
	ip        string
	ports     []int // the peer and store ports it listens on
	storeAddr string
	args      []string
	logPath   string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// start launches the member's process; its output is appended to its log,
// so a restart keeps the earlier lines.
func (m *member) start(bin string) error {
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("linearizability: %w", err)
	}
	fmt.Fprintf(log, "=== %s starting at %s\n", m.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The servers must not outlive a test binary that dies without running
	// its cleanups (a panic, a -timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("linearizability: starting %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited, m.paused = cmd, exited, false
	m.mu.Unlock()
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (m *member) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.paused = false
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill() // a stopped process dies of SIGKILL too
	<-exited
}

// signal sends a stop or continue signal to the running process.
func (m *member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("linearizability: %s is not running", m.name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("linearizability: %s to %s: %w", sig, m.name, err)
	}
	m.paused = sig == syscall.SIGSTOP
	return nil
}

// running reports whether the process is alive and not paused.
func (m *member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.paused {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}
