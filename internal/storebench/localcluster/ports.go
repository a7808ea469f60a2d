package localcluster

import (
	"strconv"

	"cairn/internal/testport"
	"fmt"
	"net"
)

// freePorts reserves n distinct loopback ports by listening on them all at
// once, then releases them for the servers to take. Another process could
// grab one in between, which on a test machine is rare enough to accept.
func freePorts(n int) ([]int, error) {
	addrs, err := testport.Free(n)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	ps := make([]int, len(addrs))
	for i, a := range addrs {
		_, port, _ := net.SplitHostPort(a)
		ps[i], _ = strconv.Atoi(port)
	}
	return ps, nil
}
