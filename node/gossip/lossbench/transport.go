package lossbench

import (
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// nsTransport is memberlist's network transport with its sockets and its
// outgoing TCP connections in the namespace: memberlist dials from
// whichever thread it runs on, which is in the host's namespace.
type nsTransport struct {
	*memberlist.NetTransport
	ns *netns
}

// DialTimeout implements memberlist.Transport.
func (t *nsTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.ns.dial(addr, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *nsTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.ns.dial(a.Addr, timeout)
}

// newTransport binds a transport on 127.0.0.1:port inside ns.
func newTransport(ns *netns, port int, logger *log.Logger) (*nsTransport, error) {
	var nt *memberlist.NetTransport
	err := ns.do(func() error {
		var err error
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: port, Logger: logger})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &nsTransport{NetTransport: nt, ns: ns}, nil
}
