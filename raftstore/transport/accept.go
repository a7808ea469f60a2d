package transport

import (
	"errors"
	"log/slog"
	"net"
	"time"
)

// maxAcceptBackoff caps the pause after a failed accept (out of file
// descriptors, for instance) before the next try.
const maxAcceptBackoff = time.Second

// acceptRetry accepts from ln, riding out the errors a live listener can
// return (resource shortages that pass) with a growing pause. It returns
// net.ErrClosed once ln or done is closed.
func acceptRetry(ln net.Listener, done <-chan struct{}, log *slog.Logger) (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		select {
		case <-done:
			return nil, net.ErrClosed
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, net.ErrClosed
		}
		backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
		log.Warn("accept failed; retrying", "addr", ln.Addr().String(), "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-done:
			return nil, net.ErrClosed
		}
	}
}
