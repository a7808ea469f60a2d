package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"cairn/internal/pki"
)

// HandshakeTimeout bounds a TLS handshake on both ends, so a client that
// connects and then stalls holds nothing but its own goroutine for long.
const HandshakeTimeout = 5 * time.Second

// NewTLSListener wraps inner so that Accept returns only connections whose
// TLS server handshake with cfg succeeded. Handshakes run concurrently and
// time out after HandshakeTimeout, so one slow or malicious client cannot
// hold up the others. Each refused connection is logged once at WARN with
// the remote address and the reason. A nil cfg returns inner unchanged, for
// insecure mode.
func NewTLSListener(inner net.Listener, cfg *tls.Config, log *slog.Logger) net.Listener {
	if cfg == nil {
		return inner
	}
	return newTLSListener(inner, cfg, log, HandshakeTimeout)
}

// tlsListener hands out connections that completed their handshake.
type tlsListener struct {
	inner   net.Listener
	cfg     *tls.Config
	log     *slog.Logger
	timeout time.Duration

	// conns is unbuffered: a handshaken connection waits in its own
	// goroutine until Accept takes it or the listener closes.
	conns chan net.Conn

	// ctx is cancelled on close, aborting handshakes in flight.
	ctx    context.Context
	cancel context.CancelFunc

	stopOnce sync.Once
	done     chan struct{}
	err      error // why the listener stopped; written before done is closed
}

func newTLSListener(inner net.Listener, cfg *tls.Config, log *slog.Logger, timeout time.Duration) *tlsListener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsListener{
		inner:   inner,
		cfg:     cfg,
		log:     log,
		timeout: timeout,
		conns:   make(chan net.Conn),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go l.acceptLoop()
	return l
}

// Accept returns the next connection whose TLS handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close stops accepting, closes the inner listener and aborts handshakes in
// flight.
func (l *tlsListener) Close() error {
	l.stop(net.ErrClosed)
	return nil
}

// Addr returns the inner listener's address.
func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }

func (l *tlsListener) stop(err error) {
	l.stopOnce.Do(func() {
		l.err = err
		close(l.done)
		l.cancel()
		l.inner.Close()
	})
}

func (l *tlsListener) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *tlsListener) acceptLoop() {
	for {
		raw, err := acceptRetry(l.inner, l.done, l.log)
		if err != nil {
			l.stop(err)
			return
		}
		go l.handshake(raw)
	}
}

func (l *tlsListener) handshake(raw net.Conn) {
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	defer cancel()
	tc := tls.Server(raw, l.cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		l.logRefusal(raw.RemoteAddr(), err)
		return
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		tc.Close()
	}
}

func (l *tlsListener) logRefusal(remote net.Addr, err error) {
	if l.closed() {
		return
	}
	// A TCP probe (a load balancer's health check, a port scan) connects
	// and leaves without a word: worth a debug line, not a warning.
	if errors.Is(err, io.EOF) {
		l.log.Debug("connection closed before the TLS handshake", "remote", remote.String())
		return
	}
	l.log.Warn("refused client "+remote.String()+": "+pki.Describe(err),
		"remote", remote.String(), "local", l.inner.Addr().String(), "err", err)
}
