package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"cairn/internal/pki"
)

// NewStreamLayer returns the raft StreamLayer of a replica: it accepts from
// ln (the Mux's Raft listener) and dials peers over TCP, then TLS with
// clientTLS (nil means plain TCP). Addr reports advertise, the address the
// other replicas know this one by. When sourceIP is not nil, outgoing
// connections are bound to it, so each replica of a test cluster on one
// machine has its own source address and can be cut off by firewall rules.
func NewStreamLayer(ln net.Listener, advertise net.Addr, clientTLS *tls.Config, sourceIP net.IP) raft.StreamLayer {
	if advertise == nil {
		advertise = ln.Addr()
	}
	return &streamLayer{Listener: ln, advertise: advertise, tls: clientTLS, dialer: newDialer(sourceIP)}
}

// streamLayer implements raft.StreamLayer.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	tls       *tls.Config
	dialer    net.Dialer
}

// Addr returns the advertised address, which raft hands to its peers.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a peer; timeout bounds the TCP connect and the TLS
// handshake together (zero means HandshakeTimeout for the handshake).
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return dialTLS(ctx, s.dialer, string(address), s.tls)
}

// DialPeer connects to a peer's port as the StreamLayer does: TCP from
// sourceIP (when not nil), then TLS with clientTLS (nil means plain TCP).
func DialPeer(ctx context.Context, address string, clientTLS *tls.Config, sourceIP net.IP) (net.Conn, error) {
	return dialTLS(ctx, newDialer(sourceIP), address, clientTLS)
}

func newDialer(sourceIP net.IP) net.Dialer {
	var d net.Dialer
	if sourceIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: sourceIP}
	}
	return d
}

// dialTLS opens a TCP connection and runs the TLS client handshake on it,
// verifying the peer under the host it was dialed by.
func dialTLS(ctx context.Context, d net.Dialer, address string, cfg *tls.Config) (net.Conn, error) {
	raw, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("transport: dialing %s: %w", address, err)
	}
	if cfg == nil {
		return raw, nil
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			raw.Close()
			return nil, fmt.Errorf("transport: dialing %s: %w", address, err)
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, HandshakeTimeout)
		defer cancel()
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: TLS handshake with %s failed: %s: %w", address, pki.Describe(err), err)
	}
	return tc, nil
}
