package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// grpcFirstByte opens the HTTP/2 client preface ("PRI * HTTP/2.0") that every
// gRPC connection starts with. Raft connections start with a message type,
// a small number, so one byte tells the two apart.
const grpcFirstByte = 'P'

// ProposeFirstByte opens a connection that carries writes a follower
// forwards to the leader. The dialer sends it first; the Propose listener's
// connections still start with it.
const ProposeFirstByte = 'F'

// Mux shares one peer port between raft, the forwarded-write channel and an
// internal gRPC service. It terminates TLS (when configured), looks at the
// first byte of each connection without consuming it, and hands the
// connection to the GRPC, Propose or Raft listener. The gRPC server behind GRPC() must use insecure
// credentials: TLS is already done by then.
type Mux struct {
	ln      net.Listener
	log     *slog.Logger
	grpc    *subListener
	raft    *subListener
	propose *subListener

	closeOnce sync.Once
	done      chan struct{}
}

// NewMux returns a Mux over ln. With a non-nil cfg, connections go through
// a TLS listener first (see NewTLSListener); nil means plain TCP. Call Serve
// to start routing.
func NewMux(ln net.Listener, cfg *tls.Config, log *slog.Logger) *Mux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mux{
		ln:      NewTLSListener(ln, cfg, log),
		log:     log,
		grpc:    newSubListener(ln.Addr()),
		raft:    newSubListener(ln.Addr()),
		propose: newSubListener(ln.Addr()),
		done:    make(chan struct{}),
	}
}

// GRPC returns the listener that receives the gRPC connections.
func (m *Mux) GRPC() net.Listener { return m.grpc }

// Raft returns the listener that receives every other connection: raft's.
func (m *Mux) Raft() net.Listener { return m.raft }

// Propose returns the listener that receives forwarded-write connections.
func (m *Mux) Propose() net.Listener { return m.propose }

// Addr returns the address of the shared port.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Serve routes connections until the Mux is closed, then returns nil. It
// returns net.ErrClosed if the listener given to NewMux was closed under it.
func (m *Mux) Serve() error {
	defer m.grpc.Close()
	defer m.raft.Close()
	defer m.propose.Close()
	for {
		c, err := acceptRetry(m.ln, m.done, m.log)
		if err != nil {
			select {
			case <-m.done:
				return nil
			default:
				return fmt.Errorf("transport: peer listener %s: %w", m.ln.Addr(), err)
			}
		}
		go m.route(c)
	}
}

// Close stops the Mux and its listeners. Connections already handed
// out stay open.
func (m *Mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.done)
		err = m.ln.Close()
		m.grpc.Close()
		m.raft.Close()
		m.propose.Close()
	})
	return err
}

// route reads the first byte in the connection's own goroutine: a peer that
// finishes its handshake and then says nothing must not delay the others.
func (m *Mux) route(c net.Conn) {
	first := make([]byte, 1)
	c.SetReadDeadline(time.Now().Add(HandshakeTimeout))
	_, err := io.ReadFull(c, first)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			m.log.Warn("peer connection sent nothing; closed", "remote", c.RemoteAddr().String())
		} else {
			m.log.Debug("peer connection closed before its first byte", "remote", c.RemoteAddr().String(), "err", err)
		}
		return
	}
	pc := &prefixConn{Conn: c, prefix: first}
	switch first[0] {
	case grpcFirstByte:
		m.grpc.deliver(pc)
	case ProposeFirstByte:
		m.propose.deliver(pc)
	default:
		m.raft.deliver(pc)
	}
}

// prefixConn gives back the bytes the Mux read before the connection's new
// owner reads the rest.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// subListener is one of the Mux's outputs. Closing it (as grpc.Server
// and raft do on shutdown) closes only that protocol's side of the port.
type subListener struct {
	addr      net.Addr
	conns     chan net.Conn
	closeOnce sync.Once
	done      chan struct{}
}

func newSubListener(addr net.Addr) *subListener {
	return &subListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *subListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *subListener) Addr() net.Addr { return l.addr }

func (l *subListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}
