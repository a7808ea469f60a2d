package agent

import (
	"errors"
	"net"
	"net/http"
	"sync"
)

// failover sends each request to one of several API servers, sticking to
// the one that last answered and moving on to the next when it cannot be
// reached. Only requests that never left (the dial failed) are sent
// again, so a write is never applied twice.
type failover struct {
	next  http.RoundTripper
	hosts []string // host:port of each API server

	mu      sync.Mutex
	current int
}

func newFailover(next http.RoundTripper, hosts []string) *failover {
	return &failover{next: next, hosts: hosts}
}

// RoundTrip implements http.RoundTripper.
func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	var lastErr error
	for range f.hosts {
		f.mu.Lock()
		i := f.current
		f.mu.Unlock()
		r := req.Clone(req.Context())
		r.URL.Host = f.hosts[i]
		r.Host = ""
		if req.Body != nil && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		resp, err := f.next.RoundTrip(r)
		if err == nil {
			return resp, nil
		}
		lastErr = err
		if !notSent(err) || (req.Body != nil && req.GetBody == nil) {
			return nil, err
		}
		f.mu.Lock()
		if f.current == i {
			f.current = (i + 1) % len(f.hosts)
		}
		f.mu.Unlock()
	}
	return nil, lastErr
}

// notSent reports whether err means the request never reached a server:
// its connection could not be made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
