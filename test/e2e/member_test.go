package e2e

import (
	"cairn/internal/testport"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// member is one `cairn server` process, restartable with the same flags.
type member struct {
	name    string
	dataDir string
	peer    string // host:port of --peer-listen
	store   string // host:port of --store-listen
	metrics string // host:port of --metrics-listen
	logPath string
	args    []string // the flags of the last start

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit, valid once done is closed
}

// newMember gives a member a data dir and log under dir and three free
// loopback ports.
func newMember(t testing.TB, dir, name string) *member {
	t.Helper()
	ports := freePorts(t, 3)
	return &member{
		name:    name,
		dataDir: filepath.Join(dir, name+".data"),
		peer:    ports[0],
		store:   ports[1],
		metrics: ports[2],
		logPath: filepath.Join(dir, name+".log"),
	}
}

// freePorts returns n loopback addresses whose ports are free right now.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs, err := testport.Free(n)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	return addrs
}

// storeURL is the URL clients and --join use.
func (m *member) storeURL() string { return "https://" + m.store }

// start launches the server with args; its output is appended to the
// member's log, so a restart keeps the earlier lines.
func (m *member) start(t testing.TB, args []string) {
	t.Helper()
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	fmt.Fprintf(log, "=== %s $ cairn %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(cairnBin(t), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("e2e: starting %s: %v", m.name, err)
	}
	m.args, m.cmd, m.done = args, cmd, make(chan struct{})
	go func() {
		m.err = cmd.Wait()
		log.Close()
		close(m.done)
	}()
}

// exited reports whether the started process has ended.
func (m *member) exited() bool {
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

// signalStop asks a running server to shut down.
func (m *member) signalStop() {
	if !m.exited() {
		m.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// wait waits for the process to end after signalStop, killing it when it
// takes longer than a clean shutdown should, and returns how it exited.
func (m *member) wait() error {
	if m.done == nil {
		return nil
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
		return fmt.Errorf("e2e: %s did not stop within 10s of SIGTERM and was killed", m.name)
	}
	return m.err
}

// stop shuts the server down and returns how it exited.
func (m *member) stop() error {
	m.signalStop()
	return m.wait()
}

// waitHealthy waits until the member's /health answers 200, and fails the
// test with the member's log when it exits or stays unhealthy.
func (m *member) waitHealthy(t testing.TB) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m.exited() {
			t.Fatalf("%s exited (%v) instead of becoming healthy:\n%s", m.name, m.err, m.logTail(40))
		}
		resp, err := client.Get("http://" + m.metrics + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy after 30s (last: %v):\n%s", m.name, statusOf(resp, err), m.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func statusOf(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// log returns everything the member's processes have printed.
func (m *member) log() string {
	b, _ := os.ReadFile(m.logPath)
	return string(b)
}

// logTail returns the member's last n log lines.
func (m *member) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(m.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
