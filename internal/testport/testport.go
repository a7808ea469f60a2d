// Package testport picks loopback ports for tests that start servers.
//
// Ports come from below the kernel's ephemeral range (32768-60999 on
// Linux), which outgoing connections and ":0" listeners draw from: a port
// picked there can be taken by another test's connection before the
// server binds it, and the server then fails with "address in use".
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
)

const (
	low  = 20000
	high = 32000
)

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
		if tries > 1000 {
			return nil, fmt.Errorf("testport: no free port in %d-%d on %s", low, high, host)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(low+rand.IntN(high-low))))
		if err != nil {
			continue
		}
		held = append(held, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}
