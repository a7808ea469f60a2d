// Package testport picks loopback ports for tests that start servers.
//
// Ports come from below the kernel's ephemeral range (32768-60999 on
// Linux), which outgoing connections and ":0" listeners draw from: a port
// picked there can be taken by another test's connection before the
// server binds it, and the server then fails with "address in use".
// Within one test process, ports are handed out in sequence from a random
// start, so two picks never return the same port even after the first
// one's listener is closed.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
)

const (
	low  = 20000
	high = 32000
)

// next is the offset of the next port to try; it only grows. Test
// support, so a process-wide counter is what keeps picks distinct.
var next atomic.Int64

func init() { next.Store(int64(rand.IntN(high - low))) }

// Free returns n distinct loopback addresses (host "127.0.0.1" unless ip
// is given) whose ports are free now.
func Free(n int, ip ...string) ([]string, error) {
	host := "127.0.0.1"
	if len(ip) > 0 {
		host = ip[0]
	}
	var addrs []string
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for tries := 0; len(addrs) < n; tries++ {
		if tries > high-low {
			return nil, fmt.Errorf("testport: no free port in %d-%d on %s", low, high, host)
		}
		port := low + int(next.Add(1)%(high-low))
		ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err != nil {
			continue
		}
		held = append(held, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}
