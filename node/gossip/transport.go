package gossip

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// dialTransport is memberlist's network transport with its TCP dials
// (joins, push/pull, fallback probes) made by Config.Dial: an agent whose
// node lives in its own network namespace binds there, but memberlist
// dials from whatever thread it runs on.
type dialTransport struct {
	*memberlist.NetTransport
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialTimeout implements memberlist.Transport.
func (t *dialTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return t.dial(ctx, "tcp", addr)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *dialTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// newDialTransport binds host:port (port 0: any) and dials with dial.
func newDialTransport(host string, port int, logger *log.Logger, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*dialTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &dialTransport{NetTransport: nt, dial: dial}, nil
}
