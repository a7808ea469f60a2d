package deploy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// unit is a service of a machine run by the lab in place of systemd.
type unit struct {
	m    *machine
	name string

	// Guarded by m.mu.
	killMode string
	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	stopping bool
}

// unitSpec is what the lab takes from a unit file.
type unitSpec struct {
	argv        []string
	killMode    string
	stopTimeout time.Duration
}

// logPath is the unit's journal.
func (u *unit) logPath() string { return u.m.path("/var/log/" + u.name + ".log") }

// running reports whether the unit's main process is alive.
func (u *unit) running() bool {
	u.m.mu.Lock()
	defer u.m.mu.Unlock()
	return u.unsafeRunning()
}

func (u *unit) unsafeRunning() bool {
	if u.done == nil {
		return false
	}
	select {
	case <-u.done:
		return false
	default:
		return true
	}
}

// unit returns the machine's unit of that name, made on first use.
func (m *machine) unit(name string) *unit {
	name = strings.TrimSuffix(name, ".service")
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.units[name]
	if u == nil {
		u = &unit{m: m, name: name}
		m.units[name] = u
	}
	return u
}

// allUnits returns the units used so far, by name.
func (m *machine) allUnits() []*unit {
	m.mu.Lock()
	defer m.mu.Unlock()
	var us []*unit
	for _, u := range m.units {
		us = append(us, u)
	}
	sort.Slice(us, func(i, j int) bool { return us[i].name < us[j].name })
	return us
}

// spec reads the unit file installed in the machine's root. haproxy is
// Debian's unit, in the foreground (-db) since the lab supervises it.
func (u *unit) spec() (unitSpec, error) {
	s := unitSpec{killMode: "control-group", stopTimeout: 90 * time.Second}
	if u.name == "haproxy" {
		s.argv = []string{"haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"}
		return s, nil
	}
	file := u.m.path("/etc/systemd/system/" + u.name + ".service")
	lines := readLines(file)
	if lines == nil {
		return s, fmt.Errorf("lab: unit %s.service not found on %s", u.name, u.m.name)
	}
	for _, line := range lines {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		switch key {
		case "ExecStart":
			s.argv = strings.Fields(value)
		case "KillMode":
			s.killMode = value
		case "TimeoutStopSec":
			d, err := time.ParseDuration(value)
			if err != nil {
				return s, fmt.Errorf("%s: TimeoutStopSec=%s: %v", file, value, err)
			}
			s.stopTimeout = d
		}
	}
	if len(s.argv) == 0 {
		return s, fmt.Errorf("%s has no ExecStart", file)
	}
	return s, nil
}

// render writes the copy of a configuration file the unit really reads:
// the machine's paths rewritten, 0.0.0.0 made the machine's address, and,
// for HAProxy, the lines only the packaged service can honour (chroot,
// user, daemon, the stats socket, syslog) left out.
func (u *unit) render(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text, err := u.m.rewrite(string(b))
	if err != nil {
		return "", err
	}
	text = strings.ReplaceAll(text, "0.0.0.0:", u.m.ip+":")
	if u.name == "haproxy" {
		var keep []string
		for _, line := range strings.Split(text, "\n") {
			switch f := strings.Fields(line); {
			case len(f) > 0 && (f[0] == "chroot" || f[0] == "user" || f[0] == "group" || f[0] == "daemon"):
			case len(f) > 1 && f[0] == "stats" && (f[1] == "socket" || f[1] == "timeout"):
			case len(f) > 1 && f[0] == "log" && f[1] != "global":
			default:
				keep = append(keep, line)
			}
		}
		text = strings.Join(keep, "\n")
	}
	out := u.m.path("/run/lab/" + u.name + "-" + filepath.Base(path))
	return out, os.WriteFile(out, []byte(text), 0o600)
}

// start runs the unit's ExecStart unless it is running.
func (u *unit) start() error {
	m := u.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.unsafeRunning() {
		return nil
	}
	s, err := u.spec()
	if err != nil {
		return err
	}
	var argv []string
	for _, a := range s.argv {
		r, err := m.rewrite(a)
		if err != nil {
			return err
		}
		if r != a && (strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".cfg")) {
			if r, err = u.render(r); err != nil {
				return fmt.Errorf("%s: %v", u.name, err)
			}
		}
		argv = append(argv, r)
	}
	log, err := os.OpenFile(u.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== %s %s $ %s\n", time.Now().Format(time.RFC3339Nano), m.name, strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(baseEnv(m), m.lab.unitEnv...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, as a unit's cgroup, so that a stop reaches
	// its children too (unless KillMode=process).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("%s: %v", u.name, err)
	}
	done := make(chan struct{})
	u.cmd, u.done, u.killMode, u.stopping = cmd, done, s.killMode, false
	go func() {
		err := cmd.Wait()
		log.Close()
		m.mu.Lock()
		u.err = err
		expected := u.stopping
		m.mu.Unlock()
		close(done)
		if !expected {
			m.lab.record(m, u.name, "exit")
		}
	}()
	m.lab.record(m, u.name, "start")
	return nil
}

// signal sends sig as systemd's KillMode says: to the main process alone,
// or to the whole process group.
func (u *unit) signal(sig syscall.Signal, all bool) {
	m := u.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !u.unsafeRunning() {
		return
	}
	pid := u.cmd.Process.Pid
	if all || u.killMode != "process" {
		syscall.Kill(-pid, sig)
		return
	}
	syscall.Kill(pid, sig)
}

// stop sends SIGTERM and waits for the main process, killing the unit
// when it outlives its stop timeout (at most 20s here).
func (u *unit) stop() error {
	m := u.m
	m.mu.Lock()
	if !u.unsafeRunning() {
		m.mu.Unlock()
		return nil
	}
	u.stopping = true
	done := u.done
	m.mu.Unlock()
	m.lab.record(m, u.name, "stop")
	u.signal(syscall.SIGTERM, false)
	s, err := u.spec()
	timeout := 20 * time.Second
	if err == nil && s.stopTimeout < timeout {
		timeout = s.stopTimeout
	}
	select {
	case <-done:
	case <-time.After(timeout):
		u.signal(syscall.SIGKILL, true)
		<-done
		return fmt.Errorf("%s on %s did not stop within %s of SIGTERM and was killed", u.name, m.name, timeout)
	}
	m.lab.record(m, u.name, "stopped")
	return nil
}

// kill ends every process of the unit at once, as a power loss would.
func (u *unit) kill() {
	m := u.m
	m.mu.Lock()
	if !u.unsafeRunning() {
		m.mu.Unlock()
		return
	}
	u.stopping = true
	done := u.done
	m.mu.Unlock()
	m.lab.record(m, u.name, "kill")
	u.signal(syscall.SIGKILL, true)
	<-done
}

// stopAll stops every unit of every machine at once.
func (l *lab) stopAll() {
	l.mu.Lock()
	var ms []*machine
	for _, m := range l.machines {
		ms = append(ms, m)
	}
	l.mu.Unlock()
	// A machine's lock is never taken under the lab's.
	var us []*unit
	for _, m := range ms {
		us = append(us, m.allUnits()...)
	}
	errs := make(chan error, len(us))
	for _, u := range us {
		go func() { errs <- u.stop() }()
	}
	for range us {
		if err := <-errs; err != nil {
			l.t.Log(err)
		}
	}
}

// baseEnv is the environment of a machine's commands and units: nothing of
// the test's own, so that no KUBECONFIG or ETCDCTL_* leaks in.
func baseEnv(m *machine) []string {
	return []string{
		"PATH=" + m.path("/usr/local/bin") + ":/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + m.path("/root"),
		"TMPDIR=" + m.path("/tmp"),
		"LANG=C.UTF-8",
	}
}

// waitHealthy waits until a server's /health (on metrics-listen, port
// 2381 in the examples) answers 200.
func (m *machine) waitHealthy(timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	u := m.unit("cairn-server")
	for time.Now().Before(deadline) {
		if !u.running() {
			return fmt.Errorf("the server on %s is not running:\n%s", m.name, tail(u.logPath(), 20))
		}
		resp, err := client.Get("http://" + net.JoinHostPort(m.ip, "2381") + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not healthy after %s (last: %v):\n%s", m.name, timeout, last, tail(u.logPath(), 20))
}
