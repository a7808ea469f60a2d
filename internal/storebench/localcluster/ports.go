package localcluster

import (
	"fmt"
	"net"
)

// freePorts reserves n distinct loopback ports by listening on them all at
// once, then releases them for the servers to take. Another process could
// grab one in between, which on a test machine is rare enough to accept.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ps := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localcluster: finding a free port: %w", err)
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}
