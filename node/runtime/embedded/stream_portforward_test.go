package embedded

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/internal/testimage"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// forwardClient is the client's side of a port-forward: the kubelet's
// stream, as an in-memory pipe each way.
type forwardClient struct {
	toPod   *io.PipeWriter
	fromPod *io.PipeReader
	res     chan error
}

// pipeConn is the runtime's side of a forwardClient.
type pipeConn struct {
	*io.PipeReader
	*io.PipeWriter
}

func (c pipeConn) Close() error {
	c.PipeReader.Close()
	return c.PipeWriter.Close()
}

// forward starts a port-forward to port in the sandbox.
func (e *testEnv) forward(ctx context.Context, sandbox string, port int32) *forwardClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &forwardClient{toPod: inW, fromPod: outR, res: make(chan error, 1)}
	e.t.Cleanup(func() { inW.Close(); outR.Close() })
	go func() { c.res <- e.rt.PortForward(ctx, sandbox, port, pipeConn{inR, outW}) }()
	return c
}

// result returns what PortForward returned.
func (c *forwardClient) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.res:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("port-forward still running after 5s")
		return nil
	}
}

// waitListening polls until a port-forward to port no longer fails.
func (e *testEnv) waitListening(sandbox string, port int32) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := e.forward(e.ctx, sandbox, port)
		c.toPod.Close()
		go io.Copy(io.Discard, c.fromPod)
		err := c.result(e.t)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("nothing listens on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPortForwardReachesThePodsLoopback(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("forward")
	// An echo server on every address of the pod, one cat per
	// connection; and an HTTP server on the IPv6 loopback only.
	e.start(sb, container("echo", "nc", "-ll", "-p", "7000", "-e", "/bin/cat"))
	e.waitListening(sb, 7000)

	t.Run("data both ways with half-close", func(t *testing.T) {
		c := e.forward(e.ctx, sb, 7000)
		io.WriteString(c.toPod, "ping\n")
		got := make([]byte, 5)
		if _, err := io.ReadFull(c.fromPod, got); err != nil || string(got) != "ping\n" {
			t.Fatalf("echo = %q, %v; want ping", got, err)
		}
		io.WriteString(c.toPod, "last words")
		c.toPod.Close() // the pod's cat sees the end of its input, and exits
		rest, err := io.ReadAll(c.fromPod)
		if err != nil || string(rest) != "last words" {
			t.Errorf("after the half-close the pod sent %q, %v; want the echo of the last words, then the end", rest, err)
		}
		if err := c.result(t); err != nil {
			t.Errorf("PortForward = %v", err)
		}
	})
	t.Run("refused port", func(t *testing.T) {
		c := e.forward(e.ctx, sb, 7001)
		err := c.result(t)
		if err == nil || !strings.Contains(err.Error(), "port 7001 in sandbox "+sb) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("PortForward to a closed port = %v, want an error naming the port, the sandbox and the refusal", err)
		}
		if n, err := c.fromPod.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("the stream after a refusal read %d, %v; want it closed", n, err)
		}
	})
	t.Run("cancel ends the forward", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		c := e.forward(ctx, sb, 7000)
		io.WriteString(c.toPod, "x")
		io.ReadFull(c.fromPod, make([]byte, 1))
		cancel()
		if err := c.result(t); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled PortForward = %v, want context.Canceled", err)
		}
	})
	t.Run("server on the IPv6 loopback only", func(t *testing.T) {
		if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
			privtest.Unavailable(t, "no IPv6 on this kernel")
		}
		e.start(sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "http6"},
			Image:    &runtimeapi.ImageSpec{Image: testimage.HTTPServerRef},
			Command:  []string{"/bin/testhttp", "serve", "-listen", "[::1]:7080"},
			LogPath:  "http6.log",
		})
		e.waitListening(sb, 7080)
		c := e.forward(e.ctx, sb, 7080)
		io.WriteString(c.toPod, "GET / HTTP/1.0\r\n\r\n")
		c.toPod.Close()
		resp, err := io.ReadAll(c.fromPod)
		if err != nil || !strings.Contains(string(resp), "hello from forward") {
			t.Errorf("HTTP over the forward = %q, %v; want the pod's greeting", resp, err)
		}
		if err := c.result(t); err != nil {
			t.Errorf("PortForward = %v", err)
		}
	})
	t.Run("unknown sandbox", func(t *testing.T) {
		if err := e.forward(e.ctx, "nope", 7000).result(t); !isNotFound(err) {
			t.Errorf("PortForward to an unknown sandbox = %v, want NotFound", err)
		}
	})
}
