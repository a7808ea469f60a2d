package deploy

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireTool skips the test when a program it needs is missing, or
// fails it when CAIRN_REQUIRE_PRIVILEGED=1 (as in CI, where every test
// must run).
func requireTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	msg := name + " is not installed (Debian package " + pkg + ": apt-get install -y " + pkg + ")"
	if os.Getenv("CAIRN_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// leader returns the server that leads the store, from the servers'
// cairn_store_is_leader metric.
func (l *lab) leader(t *testing.T, names ...string) *machine {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range names {
			m := l.machine(name)
			resp, err := client.Get("http://" + m.ip + ":2381/metrics")
			if err != nil {
				continue
			}
			s := bufio.NewScanner(resp.Body)
			for s.Scan() {
				if s.Text() == "cairn_store_is_leader 1" {
					resp.Body.Close()
					return m
				}
			}
			resp.Body.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no leader among %v", names)
	return nil
}

// retryWindow is how long after a server fails clients may see errors:
// HAProxy takes it out after two failed health checks, 1 to 1.5 s apart.
const retryWindow = 5 * time.Second

// TestHAProxyKeepsKubectlWorkingWhenAServerFails runs kubectl writes and
// reads through the HAProxy front of a bootstrapped cluster while one
// server after the other fails: the leader killed (SIGKILL), a follower
// killed, and a follower paused (SIGSTOP), which only the health checks
// notice. A request may fail in the few seconds after a server goes;
// every request after that must succeed the first time.
func TestHAProxyKeepsKubectlWorkingWhenAServerFails(t *testing.T) {
	requireTool(t, "haproxy", "haproxy")
	l := newLab(t)
	l.bootstrap(t)
	servers := []string{"s1", "s2", "s3"}
	loop := startLoop(l.kubectl(t), "ha")
	t.Cleanup(loop.stopLoop)
	loop.waitSuccesses(t, time.Time{}, 4, 30*time.Second)

	var windows []window
	follower := func(t *testing.T) *machine {
		lead := l.leader(t, servers...)
		for _, name := range servers {
			if name != lead.name {
				return l.machine(name)
			}
		}
		return nil
	}
	tests := []struct {
		name   string
		victim func(t *testing.T) *machine
		fail   func(u *unit)
		heal   func(u *unit) error
	}{
		{"LeaderKilled", func(t *testing.T) *machine { return l.leader(t, servers...) }, (*unit).kill, (*unit).start},
		{"FollowerKilled", follower, (*unit).kill, (*unit).start},
		{"FollowerPaused", follower,
			func(u *unit) { u.signal(syscall.SIGSTOP, true) },
			func(u *unit) error { u.signal(syscall.SIGCONT, true); return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.victim(t)
			u := m.unit("cairn-server")
			at := time.Now()
			tt.fail(u)
			windows = append(windows, window{from: at.Add(-100 * time.Millisecond), to: at.Add(retryWindow), what: tt.name + " " + m.name})
			// Enough requests after the window to show the survivors
			// serve everything.
			loop.waitSuccesses(t, at.Add(retryWindow), 4, 60*time.Second)
			if err := tt.heal(u); err != nil {
				t.Fatal(err)
			}
			if err := m.waitHealthy(30 * time.Second); err != nil {
				t.Fatal(err)
			}
			// Back in HAProxy's rotation after two good checks.
			time.Sleep(2500 * time.Millisecond)
		})
	}
	loop.stopLoop()
	loop.checkFailures(t, windows)
	if t.Failed() {
		t.Logf("requests:\n%s", loop.report())
	}
	if logs := readFileString(t, l.machine("lb").unit("haproxy").logPath()); !strings.Contains(logs, "is DOWN") {
		t.Errorf("HAProxy never took a server out of rotation; its log:\n%s", logs)
	}
}
