package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// interactive returns the config of a busybox container running argv
// with stdin, as `kubectl run -i` makes it: the first session's end of
// input closes its stdin.
func interactive(name string, tty bool, argv ...string) *runtimeapi.ContainerConfig {
	cfg := container(name, argv...)
	cfg.Stdin, cfg.StdinOnce, cfg.Tty = true, true, tty
	return cfg
}

// attachResult is what an Attach run in the background returned.
type attachResult struct {
	err  error
	took time.Duration
}

func (e *testEnv) attachAsync(ctx context.Context, req cairnruntime.AttachRequest) <-chan attachResult {
	res := make(chan attachResult, 1)
	start := time.Now()
	go func() {
		err := e.rt.Attach(ctx, req)
		res <- attachResult{err, time.Since(start)}
	}()
	return res
}

func waitAttach(t *testing.T, res <-chan attachResult, timeout time.Duration) attachResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(timeout):
		t.Fatalf("attach still running after %s", timeout)
		return attachResult{}
	}
}

// attached is an attach session whose stdin the test writes.
type attached struct {
	stdin          *io.PipeWriter
	stdout, stderr *syncBuffer
	resize         chan cairnruntime.TerminalSize
	res            <-chan attachResult
}

// attach attaches to the container with a stdin (if withStdin), stdout,
// stderr (without tty) and, with tty, a resize channel holding a first
// size of 80x24, as kubectl sends it.
func (e *testEnv) attach(ctx context.Context, id string, tty, withStdin bool) *attached {
	a := &attached{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	req := cairnruntime.AttachRequest{ContainerID: id, TTY: tty, Stdout: a.stdout}
	if withStdin {
		in, w := io.Pipe()
		a.stdin, req.Stdin = w, in
		e.t.Cleanup(func() { w.Close() })
	}
	if tty {
		a.resize = make(chan cairnruntime.TerminalSize, 4)
		a.resize <- cairnruntime.TerminalSize{Width: 80, Height: 24}
		req.Resize = a.resize
	} else {
		req.Stderr = a.stderr
	}
	a.res = e.attachAsync(ctx, req)
	return a
}

func (a *attached) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(a.stdin, s); err != nil {
		t.Fatal(err)
	}
}

func TestAttachToAShellOnATerminal(t *testing.T) {
	e := newTestEnv(t)
	id := e.start(e.runPod("attach-tty"), interactive("sh", true, "sh"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)

	a := e.attach(e.ctx, id, true, true)
	a.write(t, "echo hello-$((6*7))\n")
	a.stdout.waitFor(t, "hello-42", 5*time.Second, nil)

	t.Run("resizes reach the shell", func(t *testing.T) {
		a.resize <- cairnruntime.TerminalSize{Width: 100, Height: 30}
		a.stdout.waitFor(t, "30 100", 5*time.Second, func() { a.write(t, "stty size\n") })
	})
	t.Run("the process has the terminal as controlling one in its own session", func(t *testing.T) {
		// Its session id is its pid, 1 in the container (field 6 of stat
		// is the session, 7 the controlling terminal).
		a.write(t, `set -- $(cat /proc/$$/stat); echo "pid-$1 session-$6 tty-$([ $7 != 0 ] && echo yes)"`+"\n")
		a.stdout.waitFor(t, "pid-1 session-1 tty-yes", 5*time.Second, nil)
		// The terminal is the container's own: its name exists there.
		a.write(t, `test -c "$(tty)" && echo tty-name-$((40+2))`+"\n")
		a.stdout.waitFor(t, "tty-name-42", 5*time.Second, nil)
	})
	t.Run("two clients see the output", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		b := e.attach(ctx, id, true, false)
		// b may not be attached yet when a line is typed: type until it
		// sees one.
		n := 0
		b.stdout.waitFor(t, "both-", 5*time.Second, func() {
			n++
			a.write(t, fmt.Sprintf("echo both-$((%d+1000))\n", n))
		})
		a.write(t, "echo both-again\n")
		for _, s := range []*syncBuffer{a.stdout, b.stdout} {
			s.waitFor(t, "both-again\r\n", 5*time.Second, nil)
		}
		cancel()
		if r := waitAttach(t, b.res, 5*time.Second); !errors.Is(r.err, context.Canceled) {
			t.Errorf("cancelled attach = %v, want context.Canceled", r.err)
		}
	})

	t.Run("a client without a terminal sees the output as stdout", func(t *testing.T) {
		// kubectl attach without -it.
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		c := e.attach(ctx, id, false, false)
		n := 0
		c.stdout.waitFor(t, "plain-", 5*time.Second, func() {
			n++
			a.write(t, fmt.Sprintf("echo plain-$((%d+2000))\n", n))
		})
		cancel()
		waitAttach(t, c.res, 5*time.Second)
	})

	a.write(t, "exit 3\n")
	if r := waitAttach(t, a.res, 5*time.Second); r.err != nil {
		t.Errorf("attach after the shell's exit = %v, want nil", r.err)
	}
	st := e.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 3 {
		t.Errorf("after exit 3 the container is %s; want exited with 3", fmtStatus(st))
	}
	if log := strings.Join(e.logLines(st.LogPath), "\n"); !strings.Contains(log, "stdout: hello-42") {
		t.Errorf("the CRI log of the tty container has no hello-42 on stdout: %q", log)
	}
}

func TestAttachToStdinOfACommand(t *testing.T) {
	e := newTestEnv(t)
	t.Run("with stdinOnce the end of the session's input closes the container's stdin", func(t *testing.T) {
		id := e.start(e.runPod("attach-cat"), interactive("cat", false, "cat"))
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
		a := e.attach(e.ctx, id, false, true)
		a.write(t, "one\n")
		a.stdout.waitFor(t, "one\n", 5*time.Second, nil)
		a.write(t, "two\n")
		a.stdout.waitFor(t, "one\ntwo\n", 5*time.Second, nil)
		a.stdin.Close()
		if r := waitAttach(t, a.res, 5*time.Second); r.err != nil {
			t.Errorf("attach after the end of stdin = %v, want nil once cat exited", r.err)
		}
		st := e.status(id)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 {
			t.Errorf("cat after the end of its stdin is %s; want exited with 0", fmtStatus(st))
		}
		if log := e.logLines(st.LogPath); strings.Join(log, "\n") != "stdout: one\nstdout: two" {
			t.Errorf("log %q, want both lines", log)
		}
	})
	t.Run("without stdinOnce stdin stays open across sessions", func(t *testing.T) {
		cfg := interactive("cat", false, "cat")
		cfg.StdinOnce = false
		id := e.start(e.runPod("attach-cat-twice"), cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
		logPath := e.status(id).LogPath
		for _, line := range []string{"first", "second"} {
			// Input only: the session ends with its input.
			err := e.rt.Attach(e.ctx, cairnruntime.AttachRequest{ContainerID: id, Stdin: strings.NewReader(line + "\n")})
			if err != nil {
				t.Fatalf("input-only attach = %v", err)
			}
			e.waitLog(logPath, line, 5*time.Second)
		}
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("cat after two sessions is %s; want running", fmtStatus(st))
		}
	})
}

func TestAttachStreamsTheOutputOfAPlainContainer(t *testing.T) {
	e := newTestEnv(t)
	id := e.start(e.runPod("attach-counter"), container("counter", "sh", "-c", "i=0; while true; do i=$((i+1)); echo count $i; echo err $i >&2; sleep 0.1; done"))
	e.waitLog(e.status(id).LogPath, "count 2", 5*time.Second)
	fds, goroutines := openFDs(t), runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	a := e.attach(ctx, id, false, false)
	a.stdout.waitFor(t, "\n", 5*time.Second, nil)
	first := firstCount(t, a.stdout.String())
	a.stdout.waitFor(t, fmt.Sprintf("count %d\n", first+2), 5*time.Second, nil)
	a.stderr.waitFor(t, fmt.Sprintf("err %d\n", first+2), 5*time.Second, nil)
	if first < 3 {
		t.Errorf("the attach started with count %d: want only output written after it attached", first)
	}
	cancel()
	if r := waitAttach(t, a.res, 5*time.Second); !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled attach = %v, want context.Canceled", r.err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t) > fds || runtime.NumGoroutine() > goroutines {
		if time.Now().After(deadline) {
			t.Fatalf("after the attach %d descriptors and %d goroutines, before %d and %d", openFDs(t), runtime.NumGoroutine(), fds, goroutines)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstCount returns the number of the first full "count N" line.
func firstCount(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^count (\d+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no count line in %q", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// stuckWriter blocks every write until released, as a client that reads
// nothing.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return 0, errors.New("released")
}

// countWriter counts what it takes.
type countWriter struct{ n atomic.Int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

func TestAttachDropsAClientThatCannotKeepUp(t *testing.T) {
	e := newTestEnv(t)
	line := strings.Repeat("0123456789", 20)
	id := e.start(e.runPod("attach-flood"), container("flood", "yes", line))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)

	stuck := stuckWriter{release: make(chan struct{})}
	var release sync.Once
	defer release.Do(func() { close(stuck.release) })
	slow := e.attachAsync(e.ctx, cairnruntime.AttachRequest{ContainerID: id, Stdout: stuck})
	var fast countWriter
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	fastRes := e.attachAsync(ctx, cairnruntime.AttachRequest{ContainerID: id, Stdout: &fast})
	// More than the slow client's queue and socket buffers could hold:
	// the container, its log and the other client went on without it.
	const want = 12 << 20
	// A guard against a hang, not a speed test: on a loaded machine the
	// flood takes a while.
	deadline := time.Now().Add(time.Minute)
	for fast.n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the fast client got %d bytes in a minute, want %d", fast.n.Load(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	release.Do(func() { close(stuck.release) })
	if r := waitAttach(t, slow, 5*time.Second); r.err == nil {
		t.Error("the stuck client's attach ended without an error")
	}
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if r := waitAttach(t, fastRes, 5*time.Second); r.err != nil {
		t.Errorf("the fast client's attach = %v once the container stopped, want nil", r.err)
	}
	if fi, err := os.Stat(e.status(id).LogPath); err != nil || fi.Size() < want {
		t.Errorf("the log holds %v bytes (%v), want the whole output", fi.Size(), err)
	}
}

func TestAttachRefusals(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("attach-refusals")
	plain := e.start(sb, container("plain", "sleep", "1000"))
	tty := e.start(sb, interactive("tty", true, "sleep", "1000"))
	done := e.start(sb, container("done", "true"))
	old := e.start(sb, container("old", "sleep", "1000"))
	for _, id := range []string{plain, tty, old} {
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
	}
	e.waitState(done, runtimeapi.ContainerState_CONTAINER_EXITED, 5*time.Second)
	// As a shim older than attach leaves it.
	if err := os.Remove(filepath.Join(e.rt.containerDir(old), helper.AttachSocket)); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	for _, tc := range []struct {
		name string
		req  cairnruntime.AttachRequest
		says string
	}{
		{"stdin of a container without stdin", cairnruntime.AttachRequest{ContainerID: plain, Stdin: strings.NewReader(""), Stdout: &out}, "stdin is not enabled for this container"},
		{"a terminal on a container without one", cairnruntime.AttachRequest{ContainerID: plain, TTY: true, Stdout: &out}, "the container has no tty"},
		{"an exited container", cairnruntime.AttachRequest{ContainerID: done, Stdout: &out}, "not running"},
		{"a container whose shim predates attach", cairnruntime.AttachRequest{ContainerID: old, Stdout: &out}, "restart the container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.rt.Attach(e.ctx, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("attach = %v, want an error saying %q", err, tc.says)
			}
		})
	}
	t.Run("an unknown container", func(t *testing.T) {
		if err := e.rt.Attach(e.ctx, cairnruntime.AttachRequest{ContainerID: "nope", Stdout: &out}); !isNotFound(err) {
			t.Errorf("attach to an unknown container = %v, want NotFound", err)
		}
	})
	t.Run("the socket is the owner's only", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(e.rt.containerDir(plain), helper.AttachSocket))
		if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("attach socket: %v, %v; want a socket of mode 0600", fi.Mode(), err)
		}
	})
}

func TestAttachToAnAdoptedContainer(t *testing.T) {
	e := newTestEnv(t)
	// Another process plays the agent: it starts the pod and exits.
	_, id := e.runAgentProcess(e.podConfig("attach-adopted"), interactive("sh", true, "sh"))
	e.rt = e.newRuntime()
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
	a := e.attach(e.ctx, id, true, true)
	a.write(t, "echo adopted-$((40+2))\n")
	a.stdout.waitFor(t, "adopted-42", 5*time.Second, nil)
	a.write(t, "exit 0\n")
	if r := waitAttach(t, a.res, 5*time.Second); r.err != nil {
		t.Errorf("attach after the shell's exit = %v, want nil", r.err)
	}
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 {
		t.Errorf("the adopted shell is %s; want exited with 0", fmtStatus(st))
	}
}
