package cri_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn/node/runtime"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// echoPort is where the test pod's server listens: it reads one line and
// answers "pong <line>".
const echoPort = 9000

func TestContainerdStreams(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	podID, pod := n.pod(t, "streams")
	id := n.container(t, podID, pod, "echo", 0, nil,
		"nc", "-ll", "-p", strconv.Itoa(echoPort), "-e", "sh", "-c", `read l; echo "pong $l"`)
	eventually(t, 10*time.Second, "the pod's server listens", func() bool {
		resp, err := n.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"netstat", "-ltn"}, Timeout: 5})
		return err == nil && strings.Contains(string(resp.Stdout), fmt.Sprintf(":%d ", echoPort))
	})

	t.Run("ExecCopiesStdinToStdoutUntilEOF", func(t *testing.T) {
		var out bytes.Buffer
		code, err := n.exec(ctx, runtime.ExecRequest{ContainerID: id, Cmd: []string{"cat"}, Stdin: strings.NewReader("hello\nworld\n"), Stdout: &out})
		if err != nil || code != 0 {
			t.Fatalf("exec cat: code %d, err %v", code, err)
		}
		if out.String() != "hello\nworld\n" {
			t.Fatalf("cat wrote %q, want its input back", out.String())
		}
	})

	t.Run("ExecKeepsStderrApartAndReturnsTheExitCode", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code, err := n.exec(ctx, runtime.ExecRequest{ContainerID: id, Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: &out, Stderr: &errOut})
		if err != nil {
			t.Fatal(err)
		}
		if code != 3 || out.String() != "out\n" || errOut.String() != "err\n" {
			t.Fatalf("exec: code %d stdout %q stderr %q, want 3, out, err", code, out.String(), errOut.String())
		}
	})

	t.Run("ExecOnATerminalFollowsResizes", func(t *testing.T) {
		resize := make(chan runtime.TerminalSize, 1)
		resize <- runtime.TerminalSize{Width: 100, Height: 30}
		close(resize)
		var out bytes.Buffer
		// The resize travels apart from the command's start: wait for it.
		script := `test -t 0 && test -t 1 && echo on-a-tty
for i in $(seq 50); do [ "$(stty size 2>/dev/null)" = "30 100" ] && echo resized && exit 0; sleep 0.1; done; exit 1`
		code, err := n.exec(ctx, runtime.ExecRequest{ContainerID: id, Cmd: []string{"sh", "-c", script}, TTY: true, Stdout: &out, Resize: resize})
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || !strings.Contains(out.String(), "on-a-tty\r\n") || !strings.Contains(out.String(), "resized") {
			t.Fatalf("exec on a tty: code %d, output %q, want on-a-tty and resized with CRLF line ends", code, out.String())
		}
	})

	t.Run("ExecEndsWithItsContext", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := n.exec(ctx, runtime.ExecRequest{ContainerID: id, Cmd: []string{"sleep", "30"}, Stdout: io.Discard})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "cri: exec in container "+id+": ") {
			t.Fatalf("exec outliving its context: %v, want the context's error naming the container", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("exec with a 500ms context returned after %v", d)
		}
	})

	t.Run("ExecInAMissingContainerFails", func(t *testing.T) {
		_, err := n.exec(ctx, runtime.ExecRequest{ContainerID: "missing", Cmd: []string{"true"}, Stdout: io.Discard})
		if err == nil || !strings.HasPrefix(err.Error(), "cri: exec in container missing: ") {
			t.Fatalf("exec in a missing container: %v", err)
		}
	})

	t.Run("PortForwardCopiesBothWays", func(t *testing.T) {
		local, remote := tcpPair(t)
		errc := make(chan error, 1)
		go func() { errc <- n.portForward(ctx, podID, echoPort, remote) }()
		if _, err := local.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		// The answer must still come after our side is done writing.
		if err := local.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		local.SetDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(local)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "pong ping\n" {
			t.Fatalf("the pod answered %q, want %q", got, "pong ping\n")
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PortForwardEndsWithItsContext", func(t *testing.T) {
		local, remote := tcpPair(t)
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		// The pod's server waits for a line that never comes.
		err := n.portForward(ctx, podID, echoPort, remote)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("port-forward outliving its context: %v, want the context's error", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("port-forward with a 500ms context returned after %v", d)
		}
		local.SetDeadline(time.Now().Add(10 * time.Second))
		if b, err := io.ReadAll(local); err != nil || len(b) > 0 {
			t.Fatalf("the forwarded connection read %q, %v; want it closed", b, err)
		}
	})

	t.Run("PortForwardToAClosedPortFails", func(t *testing.T) {
		local, remote := tcpPair(t)
		err := n.portForward(ctx, podID, echoPort+1, remote)
		// containerd's own message, which names the port.
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("localhost:%d", echoPort+1)) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("port-forward to a closed port: %v, want connection refused", err)
		}
		local.SetDeadline(time.Now().Add(10 * time.Second))
		if b, err := io.ReadAll(local); err != nil || len(b) > 0 {
			t.Fatalf("the forwarded connection read %q, %v; want it closed", b, err)
		}
	})
}

// exec and portForward call the runtime from the test's own network
// namespace: the runtime reaches containerd's streaming server in
// containerd's (Config.NetNS).
func (n *node) exec(ctx context.Context, req runtime.ExecRequest) (int, error) {
	return n.rt.Exec(ctx, req)
}

func (n *node) portForward(ctx context.Context, podID string, port int32, conn io.ReadWriteCloser) error {
	return n.rt.PortForward(ctx, podID, port, conn)
}

// tcpPair returns the two ends of a loopback TCP connection, which,
// unlike net.Pipe, can be half-closed.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialed, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dialed.Close()
		accepted.Close()
	})
	return dialed.(*net.TCPConn), accepted.(*net.TCPConn)
}
