package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	cairnruntime "cairn/node/runtime"
	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// syncBuffer is an exec's Stdout or Stderr, written by the runtime while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until the output contains want, calling poke (if not
// nil) between polls.
func (b *syncBuffer) waitFor(t *testing.T, want string, timeout time.Duration, poke func()) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q has no %q after %s", b.String(), want, timeout)
		}
		if poke != nil {
			poke()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// execResult is what an Exec run in the background returned.
type execResult struct {
	code int
	err  error
	took time.Duration
}

// execAsync runs Exec in the background.
func (e *testEnv) execAsync(ctx context.Context, req cairnruntime.ExecRequest) <-chan execResult {
	res := make(chan execResult, 1)
	start := time.Now()
	go func() {
		code, err := e.rt.Exec(ctx, req)
		res <- execResult{code, err, time.Since(start)}
	}()
	return res
}

// wait returns the Exec's result, failing the test after timeout.
func waitExec(t *testing.T, res <-chan execResult, timeout time.Duration) execResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(timeout):
		t.Fatalf("exec still running after %s", timeout)
		return execResult{}
	}
}

// running counts the live processes of the container whose command
// line is argv.
func (e *testEnv) running(id string, argv ...string) string {
	e.t.Helper()
	script := fmt.Sprintf(`n=0; for p in /proc/[0-9]*; do [ "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" = %q ] && n=$((n+1)); done; echo $n`, strings.Join(argv, " ")+" ")
	r, err := e.execSync(id, 5, "sh", "-c", script)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(r.Stdout))
}

// waitRunning polls until the container runs one process with argv.
func (e *testEnv) waitRunning(id string, argv ...string) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.running(id, argv...) != "1" {
		if time.Now().After(deadline) {
			e.t.Fatalf("%q never ran in the container", argv)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone fails the test unless the container's processes with argv
// are gone within a few seconds (a SIGKILL takes effect at once, but not
// synchronously, and a loaded machine may be slow to reap).
func (e *testEnv) waitGone(id string, argv ...string) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := e.running(id, argv...)
		if n == "0" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Errorf("%s processes %q still running", n, argv)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

func (e *testEnv) sleeper(name string) string {
	e.t.Helper()
	id := e.start(e.runPod(name), container("app", "sleep", "1000"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
	return id
}

func TestExecStreamsPipesAndExitCode(t *testing.T) {
	e := newTestEnv(t)
	id := e.sleeper("exec-pipes")
	big := 300 << 10 // more than a pipe holds
	for _, tc := range []struct {
		name           string
		argv           []string
		stdin          io.Reader
		stdout, stderr string
		code           int
		maxTook        time.Duration
	}{
		{"stdin reaches the command and its end closes it", []string{"cat"}, strings.NewReader("hello\nworld"), "hello\nworld", "", 0, 0},
		{"stderr apart and the exit code", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil, "out\n", "err\n", 3, 0},
		{"all the output of a command that exits at once", []string{"head", "-c", fmt.Sprint(big), "/dev/zero"}, nil, strings.Repeat("\x00", big), "", 0, 0},
		{"command not found", []string{"no-such-command"}, nil, "", "no-such-command", helper.ExitNotFound, 0},
		{"a background process holding the output does not hold the exec", []string{"sh", "-c", "sleep 30 & echo started"}, nil, "started\n", "", 0, drainIdle + 3*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			req := cairnruntime.ExecRequest{ContainerID: id, Cmd: tc.argv, Stdin: tc.stdin, Stdout: &stdout, Stderr: &stderr}
			r := waitExec(t, e.execAsync(e.ctx, req), 10*time.Second)
			if r.err != nil || r.code != tc.code || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exec %q = %d, %v, stdout %.200q, stderr %q; want %d, stdout %.200q, stderr with %q",
					tc.argv, r.code, r.err, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
			if tc.maxTook > 0 && r.took > tc.maxTook {
				t.Errorf("exec took %s, want at most %s", r.took, tc.maxTook)
			}
		})
	}
	t.Run("stdin streams line by line", func(t *testing.T) {
		in, toCat := io.Pipe()
		var stdout syncBuffer
		res := e.execAsync(e.ctx, cairnruntime.ExecRequest{ContainerID: id, Cmd: []string{"cat"}, Stdin: in, Stdout: &stdout})
		io.WriteString(toCat, "one\n")
		stdout.waitFor(t, "one\n", 5*time.Second, nil)
		io.WriteString(toCat, "two\n")
		stdout.waitFor(t, "two\n", 5*time.Second, nil)
		toCat.Close()
		if r := waitExec(t, res, 5*time.Second); r.err != nil || r.code != 0 || stdout.String() != "one\ntwo\n" {
			t.Errorf("cat = %d, %v, stdout %q; want 0 and both lines", r.code, r.err, stdout.String())
		}
	})
	t.Run("no streams attached", func(t *testing.T) {
		code, err := e.rt.Exec(e.ctx, cairnruntime.ExecRequest{ContainerID: id, Cmd: []string{"sh", "-c", "echo ignored; read x || exit 4"}})
		if err != nil || code != 4 {
			t.Errorf("exec without streams = %d, %v; want 4 (stdin at end of file)", code, err)
		}
	})
	t.Run("cancel kills the command", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		in, _ := io.Pipe() // never closed: the command would wait for good
		var stdout syncBuffer
		res := e.execAsync(ctx, cairnruntime.ExecRequest{ContainerID: id, Cmd: []string{"sleep", "37"}, Stdin: in, Stdout: &stdout})
		e.waitRunning(id, "sleep", "37")
		cancel()
		if r := waitExec(t, res, 5*time.Second); !errors.Is(r.err, context.Canceled) {
			t.Errorf("cancelled exec = %d, %v; want context.Canceled", r.code, r.err)
		}
		e.waitGone(id, "sleep", "37")
	})
	t.Run("leaves no descriptors or goroutines behind", func(t *testing.T) {
		fds, goroutines := openFDs(t), runtime.NumGoroutine()
		for _, tty := range []bool{false, true} {
			var stdout, stderr syncBuffer
			req := cairnruntime.ExecRequest{ContainerID: id, Cmd: []string{"cat"}, TTY: tty, Stdin: strings.NewReader("x"), Stdout: &stdout, Stderr: &stderr}
			if tty {
				req.Cmd = []string{"true"}
			}
			if code, err := e.rt.Exec(e.ctx, req); err != nil || code != 0 {
				t.Fatalf("exec (tty %v) = %d, %v", tty, code, err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for openFDs(t) > fds || runtime.NumGoroutine() > goroutines {
			if time.Now().After(deadline) {
				t.Fatalf("after the execs %d descriptors and %d goroutines, before %d and %d", openFDs(t), runtime.NumGoroutine(), fds, goroutines)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("unknown container", func(t *testing.T) {
		if _, err := e.rt.Exec(e.ctx, cairnruntime.ExecRequest{ContainerID: "nope", Cmd: []string{"true"}}); !isNotFound(err) {
			t.Errorf("exec in an unknown container = %v, want NotFound", err)
		}
	})
}

// ttyExec runs a command on a terminal with a stdin the test writes.
type ttyExec struct {
	stdin  *io.PipeWriter
	stdout *syncBuffer
	res    <-chan execResult
}

func (e *testEnv) ttyExec(ctx context.Context, id string, resize <-chan cairnruntime.TerminalSize, argv ...string) *ttyExec {
	in, w := io.Pipe()
	x := &ttyExec{stdin: w, stdout: &syncBuffer{}}
	e.t.Cleanup(func() { w.Close() })
	x.res = e.execAsync(ctx, cairnruntime.ExecRequest{ContainerID: id, Cmd: argv, TTY: true, Stdin: in, Stdout: x.stdout, Resize: resize})
	return x
}

func (x *ttyExec) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(x.stdin, s); err != nil {
		t.Fatal(err)
	}
}

func TestExecOnATerminal(t *testing.T) {
	e := newTestEnv(t)
	id := e.sleeper("exec-tty")
	t.Run("the command has a terminal of the size sent before the start", func(t *testing.T) {
		resize := make(chan cairnruntime.TerminalSize, 1)
		resize <- cairnruntime.TerminalSize{Width: 100, Height: 30}
		// Its name is the container's: programs that reopen it find it.
		x := e.ttyExec(e.ctx, id, resize, "sh", "-c", "test -t 0 && test -t 1 && test -t 2 && test -c $(tty) && echo on-a-tty; stty size")
		r := waitExec(t, x.res, 10*time.Second)
		if out := x.stdout.String(); r.err != nil || r.code != 0 || !strings.Contains(out, "on-a-tty\r\n30 100\r\n") {
			t.Errorf("exec = %d, %v, output %q; want on-a-tty and 30 100", r.code, r.err, out)
		}
	})
	t.Run("resizes reach the command and the end of stdin is end of file", func(t *testing.T) {
		resize := make(chan cairnruntime.TerminalSize, 1)
		resize <- cairnruntime.TerminalSize{Width: 80, Height: 24}
		x := e.ttyExec(e.ctx, id, resize, "sh", "-c", "stty size; while read x; do stty size; done; echo bye")
		x.stdout.waitFor(t, "24 80", 5*time.Second, nil)
		resize <- cairnruntime.TerminalSize{Width: 120, Height: 40}
		x.stdout.waitFor(t, "40 120", 5*time.Second, func() { x.write(t, "\n") })
		x.stdin.Close()
		if r := waitExec(t, x.res, 5*time.Second); r.err != nil || r.code != 0 || !strings.Contains(x.stdout.String(), "bye") {
			t.Errorf("exec = %d, %v, output %q; want the loop ended by the end of stdin", r.code, r.err, x.stdout.String())
		}
	})
	t.Run("a background process holding the terminal does not hold the exec", func(t *testing.T) {
		// Deaf to the hangup that the end of the session sends.
		x := e.ttyExec(e.ctx, id, nil, "sh", "-c", "trap '' HUP; sleep 40 & echo started")
		r := waitExec(t, x.res, 10*time.Second)
		if r.err != nil || r.code != 0 || !strings.Contains(x.stdout.String(), "started") || r.took > drainIdle+3*time.Second {
			t.Errorf("exec = %d, %v after %s, output %q; want 0 and started within %s", r.code, r.err, r.took, x.stdout.String(), drainIdle+3*time.Second)
		}
	})
	t.Run("^C interrupts the command", func(t *testing.T) {
		x := e.ttyExec(e.ctx, id, nil, "sh", "-c", "echo ready; exec sleep 30")
		x.stdout.waitFor(t, "ready", 5*time.Second, nil)
		x.write(t, "\x03")
		if r := waitExec(t, x.res, 5*time.Second); r.err != nil || r.code != 130 {
			t.Errorf("exec after ^C = %d, %v; want 130 (SIGINT)", r.code, r.err)
		}
	})
	t.Run("an interactive shell survives ^C of its foreground job", func(t *testing.T) {
		x := e.ttyExec(e.ctx, id, nil, "sh")
		x.write(t, "sleep 38\n")
		e.waitRunning(id, "sleep", "38")
		x.write(t, "\x03")
		x.write(t, "echo alive $?\n")
		x.stdout.waitFor(t, "alive 130", 5*time.Second, nil)
		x.write(t, "exit 5\n")
		if r := waitExec(t, x.res, 5*time.Second); r.err != nil || r.code != 5 {
			t.Errorf("shell exit = %d, %v; want 5 (output %q)", r.code, r.err, x.stdout.String())
		}
	})
	t.Run("cancel kills the command", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		// Deaf to the hangup of the terminal: only a kill stops it.
		x := e.ttyExec(ctx, id, nil, "sh", "-c", "trap '' HUP; exec sleep 39")
		e.waitRunning(id, "sleep", "39")
		cancel()
		if r := waitExec(t, x.res, 5*time.Second); !errors.Is(r.err, context.Canceled) {
			t.Errorf("cancelled exec = %d, %v; want context.Canceled", r.code, r.err)
		}
		e.waitGone(id, "sleep", "39")
	})
}
