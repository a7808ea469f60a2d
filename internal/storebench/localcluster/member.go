package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Member is one server process of a cluster.
type Member struct {
	// Name is the member's name in the cluster.
	Name string
	// ClientURL is where clients reach the member.
	ClientURL string
	// LogPath holds the process's standard output and error.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
}

// start launches the member's process, writes its pid file and watches for
// its exit.
func (m *Member) start(binary string, args []string, dir string) error {
	logFile, err := os.Create(m.LogPath)
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C at the terminal reaches only the
		// harness, which then stops every member itself, in order.
		Setpgid: true,
		// If the harness dies without cleaning up, the member dies too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("localcluster: starting %s: %w", m.Name, err)
	}
	m.cmd = cmd
	m.done = make(chan struct{})
	go func() {
		cmd.Wait()
		close(m.done)
	}()
	pidFile := filepath.Join(dir, m.Name+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// Exited reports whether the member's process has ended.
func (m *Member) Exited() bool {
	if m.done == nil {
		return true
	}
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// stop asks the member to shut down and kills it if it has not within grace.
func (m *Member) stop(grace time.Duration) {
	if m.Exited() {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(grace):
		m.cmd.Process.Kill()
		<-m.done
	}
}

// LogTail returns the last n bytes of the member's log, to explain a failure.
func (m *Member) LogTail(n int) string {
	b, err := os.ReadFile(m.LogPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(bytes.TrimSpace(b))
}
