package socktest

import (
	"bufio"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"cairn/internal/privtest"
)

// Backend is a server that answers with its name: a TCP server greets
// each connection with "name\n" and then echoes lines; a UDP server
// answers every datagram with its name.
type Backend struct {
	Name string
	Addr netip.AddrPort
	hits atomic.Int64

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// Hits is the number of connections (TCP) or datagrams (UDP) received.
func (b *Backend) Hits() int64 { return b.hits.Load() }

// TCPBackend listens on addr inside ns until the test ends.
func TCPBackend(t testing.TB, ns *privtest.Netns, addr, name string) *Backend {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("socktest: listen %s: %v", addr, err)
	}
	b := &Backend{Name: name, Addr: netip.MustParseAddrPort(ln.Addr().String())}
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		b.closed = true
		for _, c := range b.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.hits.Add(1)
			b.mu.Lock()
			if b.closed {
				b.mu.Unlock()
				c.Close()
				return
			}
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			go b.serveTCP(c)
		}
	}()
	return b
}

func (b *Backend) serveTCP(c net.Conn) {
	defer c.Close()
	if _, err := c.Write([]byte(b.Name + "\n")); err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := c.Write([]byte(line)); err != nil {
			return
		}
	}
}

// UDPBackend listens on addr inside ns until the test ends.
func UDPBackend(t testing.TB, ns *privtest.Netns, addr, name string) *Backend {
	t.Helper()
	var pc *net.UDPConn
	if err := ns.Do(func() error {
		a, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return err
		}
		pc, err = net.ListenUDP("udp", a)
		return err
	}); err != nil {
		t.Fatalf("socktest: listen udp %s: %v", addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	b := &Backend{Name: name, Addr: netip.MustParseAddrPort(pc.LocalAddr().String())}
	go func() {
		buf := make([]byte, 1500)
		for {
			_, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			b.hits.Add(1)
			pc.WriteToUDPAddrPort([]byte(b.Name), from)
		}
	}()
	return b
}
