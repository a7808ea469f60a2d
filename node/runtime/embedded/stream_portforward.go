package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"

	"cairn/internal/nsthread"
)

// PortForward connects conn to a port on the pod sandbox's loopback, in
// the pod's network namespace (the node's for a hostNetwork pod), and
// copies both ways, half-closes included: the end of conn's data shuts
// the connection's write side, and the end of the pod's closes conn.
// It returns once both ways are done, or when ctx ends, and always
// closes conn. conn's Close must end a Read blocked on it.
//
// The port is tried on 127.0.0.1 and, if refused there, on [::1]. A
// refused port fails with an error naming the port and the sandbox,
// which kubectl shows.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriteCloser) error {
	defer conn.Close()
	fail := func(err error) error {
		return fmt.Errorf("embedded: port-forward to port %d in sandbox %s: %w", port, sandboxID, err)
	}
	if port <= 0 || port > 65535 {
		return fail(errors.New("not a valid port"))
	}
	sb, err := r.sandbox(sandboxID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	netns, ready := sb.NetNS, sb.Ready
	r.mu.Unlock()
	if !ready {
		return fail(errors.New("the sandbox is not ready"))
	}
	pod, err := dialLoopback(ctx, netns, int(port))
	if err != nil {
		return fail(err)
	}
	if err := copyBothWays(ctx, conn, pod); err != nil {
		return fail(err)
	}
	return nil
}

// dialLoopback connects to port on the loopback of the network
// namespace at netns (the caller's if empty). The socket is made on a
// thread inside the namespace, and stays there.
func dialLoopback(ctx context.Context, netns string, port int) (*net.TCPConn, error) {
	var conn net.Conn
	var d net.Dialer
	err := nsthread.Run(netns, func() error {
		var err error
		conn, err = d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if errors.Is(err, syscall.ECONNREFUSED) {
			// A server may listen on the IPv6 loopback only. Should that
			// fail too, the IPv4 refusal is the clearer error.
			if c6, err6 := d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err6 == nil {
				conn, err = c6, nil
			}
		}
		return err
	})
	if err != nil {
		// "dial tcp4 127.0.0.1:8080: connect: connection refused" says
		// less than the caller's own prefix: keep its reason.
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, op.Err
		}
		return nil, err
	}
	return conn.(*net.TCPConn), nil
}

// copyBothWays copies conn to pod and pod to conn until both ways are
// done or ctx ends, then closes both. It returns the first failure that
// is not one of these closes.
func copyBothWays(ctx context.Context, conn io.ReadWriteCloser, pod *net.TCPConn) error {
	defer pod.Close()
	errc := make(chan error, 2)
	go func() {
		_, err := io.Copy(pod, conn)
		pod.CloseWrite()
		errc <- err
	}()
	go func() {
		_, err := io.Copy(conn, pod)
		conn.Close()
		errc <- err
	}()
	var first error
	done, cancelled := ctx.Done(), false
	for pending := 2; pending > 0; {
		select {
		case err := <-errc:
			pending--
			if first == nil && !closedErr(err) {
				first = err
			}
		case <-done:
			done, cancelled = nil, true
			pod.Close()
			conn.Close()
		}
	}
	if cancelled {
		return ctx.Err()
	}
	return first
}

// closedErr reports whether err is nil or comes from a copy whose other
// side closed its file on purpose.
func closedErr(err error) bool {
	return err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}
