package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kubectl runs `cairn kubectl` as the admin of a lab, through the load
// balancer, with a home (and so a discovery cache) of its own.
type kubectl struct {
	bin string
	env []string
}

// kubectl returns the admin's kubectl: the kubeconfig the bootstrap runbook
// writes to s1's /etc/cairn/admin.kubeconfig.
func (l *lab) kubectl(t *testing.T) kubectl {
	return kubectl{bin: l.bin, env: []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"KUBECONFIG=" + l.machine("s1").path("/etc/cairn/admin.kubeconfig"),
	}}
}

// run runs kubectl with a deadline and returns its stdout, or an error
// holding what it printed.
func (k kubectl) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"kubectl"}, args...)...)
	cmd.Env = k.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: no answer within %s", strings.Join(args, " "), timeout)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// must runs kubectl and fails the test unless it succeeds.
func (k kubectl) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k.run(30*time.Second, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// attempt is one kubectl request of a request loop.
type attempt struct {
	start, end time.Time
	op         string
	err        error
}

// requestLoop writes and reads ConfigMaps through kubectl, one request
// after the other, retrying a failed request until it succeeds, and keeps
// every attempt for checks afterwards.
type requestLoop struct {
	k      kubectl
	prefix string
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	attempts []attempt
	written  int // ConfigMaps known to exist
}

// requestTimeout bounds one request of the loop: a request stuck on a dead
// server is a failure, not a pause.
const requestTimeout = 5 * time.Second

// startLoop starts a request loop; stopLoop ends it.
func startLoop(k kubectl, prefix string) *requestLoop {
	r := &requestLoop{k: k, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *requestLoop) loop() {
	defer close(r.done)
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", r.prefix, i)
		// A create retried after a lost answer may find its own object.
		if !r.until("create", func(retry bool) error {
			_, err := r.k.run(requestTimeout, "--request-timeout=4s", "create", "configmap", name, "--from-literal=i="+name)
			if err != nil && retry && strings.Contains(err.Error(), "already exists") {
				return nil
			}
			return err
		}) {
			return
		}
		if !r.until("get", func(bool) error {
			out, err := r.k.run(requestTimeout, "--request-timeout=4s", "get", "configmap", name, "-o", "jsonpath={.data.i}")
			if err == nil && out != name {
				return fmt.Errorf("get configmap %s: data.i is %q", name, out)
			}
			return err
		}) {
			return
		}
		r.mu.Lock()
		r.written = i + 1
		r.mu.Unlock()
	}
}

// until runs op until it succeeds or the loop is stopped, recording each
// attempt; it reports whether op succeeded.
func (r *requestLoop) until(name string, op func(retry bool) error) bool {
	for retry := false; ; retry = true {
		select {
		case <-r.stop:
			return false
		default:
		}
		a := attempt{start: time.Now(), op: name}
		a.err = op(retry)
		a.end = time.Now()
		r.mu.Lock()
		r.attempts = append(r.attempts, a)
		r.mu.Unlock()
		if a.err == nil {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// successesSince counts the requests that succeeded after t.
func (r *requestLoop) successesSince(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.attempts {
		if a.err == nil && a.start.After(t) {
			n++
		}
	}
	return n
}

// waitSuccesses waits until n requests started after since have succeeded.
func (r *requestLoop) waitSuccesses(t *testing.T, since time.Time, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for r.successesSince(since) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests succeeded within %s (want %d):\n%s", r.successesSince(since), timeout, n, r.report())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopLoop ends the loop after its current request.
func (r *requestLoop) stopLoop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// window is a stretch of time in which requests may fail.
type window struct {
	from, to time.Time
	what     string
}

// checkFailures fails the test for every failed attempt that did not
// overlap a window: a client sees failures only while a server goes away,
// including a request already in flight to the server when it went.
func (r *requestLoop) checkFailures(t *testing.T, windows []window) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	failed := 0
	for _, a := range r.attempts {
		if a.err == nil {
			continue
		}
		failed++
		inside := false
		for _, w := range windows {
			if !a.end.Before(w.from) && !a.start.After(w.to) {
				inside = true
			}
		}
		if !inside {
			t.Errorf("a %s at %s failed outside the allowed windows %v: %v", a.op, a.start.Format("15:04:05.000"), describeWindows(windows), a.err)
		}
	}
	t.Logf("%d requests, %d failed (all inside the allowed windows unless reported)", len(r.attempts), failed)
}

// report describes every attempt, for failure messages.
func (r *requestLoop) report() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, a := range r.attempts {
		status := "ok"
		if a.err != nil {
			status = a.err.Error()
		}
		fmt.Fprintf(&b, "%s %-6s %5dms %s\n", a.start.Format("15:04:05.000"), a.op, a.end.Sub(a.start).Milliseconds(), status)
	}
	return b.String()
}

func describeWindows(ws []window) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s %s-%s", w.what, w.from.Format("15:04:05.000"), w.to.Format("15:04:05.000")))
	}
	return strings.Join(parts, ", ")
}

// readFileString returns a file's content, failing the test when it cannot.
func readFileString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
