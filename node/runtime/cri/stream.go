package cri

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"cairn/internal/nsthread"

	"cairn/node/runtime"

	corev1 "k8s.io/api/core/v1"
	streamspdy "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI's Exec and PortForward only hand out a URL on containerd's own
// streaming server; this file is the client of that URL, speaking SPDY
// as the kubelet's proxy to its runtime does. containerd 1.6 serves the
// remotecommand protocols v1 to v4 and portforward.k8s.io over SPDY only.

// Exec implements runtime.Streamer. The command's streams run over
// containerd's streaming server for as long as ctx allows. A goroutine
// may still be blocked reading req.Stdin after Exec returns: it ends at
// the reader's next Read, which it then drops.
func (r *Runtime) Exec(ctx context.Context, req runtime.ExecRequest) (int, error) {
	fail := func(err error) (int, error) {
		return 0, fmt.Errorf("cri: exec in container %s: %w", req.ContainerID, err)
	}
	callCtx, cancel := r.callCtx(ctx)
	resp, err := r.rt.Exec(callCtx, &runtimeapi.ExecRequest{
		ContainerId: req.ContainerID,
		Cmd:         req.Cmd,
		Tty:         req.TTY,
		Stdin:       req.Stdin != nil,
		Stdout:      req.Stdout != nil,
		// A terminal carries stderr on stdout: containerd refuses both.
		Stderr: req.Stderr != nil && !req.TTY,
	})
	cancel()
	if err != nil {
		return fail(err)
	}
	err = r.stream(ctx, resp.Url, req.TTY, req.Stdin, req.Stdout, req.Stderr, req.Resize)
	var exit exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.Exited():
		// A non-zero exit is the command's answer, not a failure to run it.
		return exit.ExitStatus(), nil
	}
	return fail(err)
}

// Attach implements runtime.Streamer through containerd's streaming
// server, as Exec does.
func (r *Runtime) Attach(ctx context.Context, req runtime.AttachRequest) error {
	callCtx, cancel := r.callCtx(ctx)
	resp, err := r.rt.Attach(callCtx, &runtimeapi.AttachRequest{
		ContainerId: req.ContainerID,
		Tty:         req.TTY,
		Stdin:       req.Stdin != nil,
		Stdout:      req.Stdout != nil,
		Stderr:      req.Stderr != nil && !req.TTY,
	})
	cancel()
	if err == nil {
		err = r.stream(ctx, resp.Url, req.TTY, req.Stdin, req.Stdout, req.Stderr, req.Resize)
	}
	if err != nil {
		return fmt.Errorf("cri: attach to container %s: %w", req.ContainerID, err)
	}
	return nil
}

// stream runs a remote command session on containerd's streaming server
// at rawURL with the given streams, for as long as ctx allows.
func (r *Runtime) stream(ctx context.Context, rawURL string, tty bool, stdin io.Reader, stdout, stderr io.Writer, resize <-chan runtime.TerminalSize) error {
	u, err := streamURL(rawURL)
	if err != nil {
		return err
	}
	transport, err := r.streamTransport(u)
	if err != nil {
		return err
	}
	executor, err := remotecommand.NewSPDYExecutorForTransports(transport, transport, http.MethodPost, u)
	if err != nil {
		return err
	}
	// Ending the stream also ends the resize goroutine waiting in Next.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: tty}
	if !tty {
		opts.Stderr = stderr
	}
	if tty && resize != nil {
		opts.TerminalSizeQueue = sizeQueue{ctx: ctx, sizes: resize}
	}
	return executor.StreamWithContext(ctx, opts)
}

// sizeQueue feeds ExecRequest.Resize to remotecommand.
type sizeQueue struct {
	ctx   context.Context
	sizes <-chan runtime.TerminalSize
}

// Next returns the next terminal size, or nil once there are no more.
func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s, ok := <-q.sizes:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Width, Height: s.Height}
	case <-q.ctx.Done():
		return nil
	}
}

// PortForward implements runtime.Streamer with one SPDY connection per
// call, carrying one error and one data stream as kubectl's port-forward
// does for each connection it accepts.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriteCloser) error {
	defer conn.Close()
	fail := func(err error) error {
		return fmt.Errorf("cri: port-forward to port %d in sandbox %s: %w", port, sandboxID, err)
	}
	callCtx, cancel := r.callCtx(ctx)
	resp, err := r.rt.PortForward(callCtx, &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: []int32{port}})
	cancel()
	if err != nil {
		return fail(err)
	}
	u, err := streamURL(resp.Url)
	if err != nil {
		return fail(err)
	}
	transport, err := r.streamTransport(u)
	if err != nil {
		return fail(err)
	}
	// A request of our own, rather than spdy.NewDialer's, so that ctx
	// bounds the connection and the upgrade too.
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return fail(err)
	}
	sconn, proto, err := spdy.NegotiateStreaming(transport, &http.Client{Transport: transport}, hreq, portforward.PortForwardProtocolV1Name)
	if err != nil {
		return fail(err)
	}
	defer sconn.Close()
	if proto != portforward.PortForwardProtocolV1Name {
		return fail(fmt.Errorf("containerd's streaming server chose protocol %q, not %s", proto, portforward.PortForwardProtocolV1Name))
	}

	// The server pairs the two streams by request id; one pair per
	// connection, so any id does.
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := sconn.CreateStream(headers)
	if err != nil {
		return fail(fmt.Errorf("creating the error stream: %w", err))
	}
	// Only the server writes on the error stream.
	errStream.Close()
	type message struct {
		text []byte
		err  error
	}
	msgc := make(chan message, 1)
	go func() {
		text, err := io.ReadAll(errStream)
		msgc <- message{text, err}
	}()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := sconn.CreateStream(headers)
	if err != nil {
		return fail(fmt.Errorf("creating the data stream: %w", err))
	}

	remoteDone := make(chan struct{})
	go func() {
		io.Copy(conn, data)
		close(remoteDone)
	}()
	localBroken := make(chan struct{})
	go func() {
		_, err := io.Copy(data, conn)
		// Closing a stream only ends our writing: the pod's answer may
		// still be on its way.
		data.Close()
		if err != nil {
			close(localBroken)
		}
	}()
	select {
	case <-remoteDone:
	case <-localBroken:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	conn.Close()
	// Drop what the pod no longer reads, so that containerd ends its side
	// and closes the error stream.
	data.Reset()
	select {
	case msg := <-msgc:
		switch {
		case msg.err != nil:
			return fail(fmt.Errorf("reading the error stream: %w", msg.err))
		case len(msg.text) > 0:
			// containerd's own message names the port and namespace.
			return errors.New(string(msg.text))
		}
		return nil
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// streamURL parses a URL containerd handed out for a stream.
func streamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("containerd's streaming URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("containerd's streaming URL %q is neither http nor https", raw)
	}
	return u, nil
}

// streamTransport dials containerd's streaming server at u, in
// Config.NetNS: its URL is on a loopback address, which is the node's.
func (r *Runtime) streamTransport(u *url.URL) (*streamspdy.SpdyRoundTripper, error) {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := nsthread.Run(r.cfg.NetNS, func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	t := &http.Transport{DialContext: dial}
	if u.Scheme == "https" {
		// With TLS streaming enabled and no certificate configured,
		// containerd serves a self-signed one it makes at start. The URL
		// comes from containerd over its local socket, and the kubelet
		// likewise skips verification for its runtime's local streaming
		// server.
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return streamspdy.NewRoundTripperWithConfig(streamspdy.RoundTripperConfig{UpgradeTransport: t, PingPeriod: 5 * time.Second})
}
