package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Balancer is an http.RoundTripper that sends each request to a healthy
// API server, fails over and retries as the package doc says, and keeps
// the list of servers and their health.
type Balancer struct {
	cfg        Config
	next       *http.Transport
	log        *slog.Logger
	restConfig *rest.Config // for the endpoint watch, through the Balancer

	// probeNow wakes the prober.
	probeNow chan struct{}

	mu        sync.Mutex
	endpoints []*endpoint
	current   *endpoint
}

// endpoint is one API server.
type endpoint struct {
	host       string // host:port
	configured bool   // from --server; never removed
	healthy    bool
	probing    bool
	lastErr    string
	downSince  time.Time
}

// Endpoint describes an API server the Balancer knows.
type Endpoint struct {
	// Host is host:port.
	Host string
	// Configured is true for --server entries, false for servers learned
	// from the kubernetes Service.
	Configured bool
	Healthy    bool
	// Current is the server requests go to now.
	Current bool
	// LastError says why the server was last marked unhealthy.
	LastError string
}

func newBalancer(cfg Config, next *http.Transport, hosts []string) *Balancer {
	b := &Balancer{cfg: cfg, next: next, log: cfg.Logger, probeNow: make(chan struct{}, 1)}
	for _, h := range hosts {
		if b.find(h) == nil {
			b.endpoints = append(b.endpoints, &endpoint{host: h, configured: true, healthy: true})
		}
	}
	return b
}

// Endpoints returns the servers the Balancer knows, configured first.
func (b *Balancer) Endpoints() []Endpoint {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Endpoint, 0, len(b.endpoints))
	for _, e := range b.endpoints {
		out = append(out, Endpoint{Host: e.host, Configured: e.configured, Healthy: e.healthy, Current: e == b.current, LastError: e.lastErr})
	}
	return out
}

// RoundTrip implements http.RoundTripper.
func (b *Balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	safe := replayable && (req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodOptions)
	tried := map[*endpoint]bool{}
	var lastErr error
	for {
		ep, more := b.pick(tried)
		if ep == nil {
			if lastErr == nil {
				lastErr = errors.New("apiclient: no API server")
			}
			return nil, lastErr
		}
		tried[ep] = true
		r, err := b.forEndpoint(req, ep, len(tried) > 1)
		if err != nil {
			return nil, err
		}
		sent := time.Now()
		resp, err := b.next.RoundTrip(r)
		if err != nil {
			if req.Context().Err() != nil {
				return nil, err // the caller gave up: no fault of the server
			}
			b.markDown(ep, err.Error())
			lastErr = fmt.Errorf("apiclient: %s: %w", ep.host, err)
			if more && (safe || (replayable && notSent(err))) {
				continue
			}
			return nil, lastErr
		}
		if serverTrouble(resp.StatusCode) {
			b.markDown(ep, resp.Status)
			if more && safe {
				// Another server may answer; this answer is dropped.
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				lastErr = fmt.Errorf("apiclient: %s answered %s", ep.host, resp.Status)
				continue
			}
			return resp, nil
		}
		b.markUp(ep, sent)
		resp.Body = &watchedBody{ReadCloser: resp.Body, b: b, ep: ep, ctx: req.Context()}
		return resp, nil
	}
}

// forEndpoint returns req addressed to ep, with a fresh body for a retry.
func (b *Balancer) forEndpoint(req *http.Request, ep *endpoint, retry bool) (*http.Request, error) {
	r := req.Clone(req.Context())
	r.URL.Host = ep.host
	r.Host = ""
	if retry && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("apiclient: replaying the request body: %w", err)
		}
		r.Body = body
	}
	return r, nil
}

// pick returns the server for the next attempt: the current one while it
// is healthy, else a random healthy one not tried yet, else (all are
// unhealthy: they may be back) the untried one that failed longest ago.
// more reports whether another untried server would remain after it.
func (b *Balancer) pick(tried map[*endpoint]bool) (ep *endpoint, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var healthy, down []*endpoint
	for _, e := range b.endpoints {
		switch {
		case tried[e]:
		case e.healthy:
			healthy = append(healthy, e)
		default:
			down = append(down, e)
		}
	}
	untried := len(healthy) + len(down)
	switch {
	case untried == 0:
		return nil, false
	case b.current != nil && b.current.healthy && !tried[b.current]:
		ep = b.current
	case len(healthy) > 0:
		ep = healthy[rand.IntN(len(healthy))]
		if b.current != ep {
			b.log.Info("API server chosen", "server", ep.host)
		}
		b.current = ep
	default:
		slices.SortFunc(down, func(x, y *endpoint) int { return x.downSince.Compare(y.downSince) })
		ep = down[0]
	}
	return ep, untried > 1
}

// markDown records that ep failed; requests move off it and the prober
// watches it.
func (b *Balancer) markDown(ep *endpoint, why string) {
	b.mu.Lock()
	wasHealthy := ep.healthy
	ep.healthy, ep.lastErr = false, why
	if wasHealthy {
		ep.downSince = time.Now()
	}
	if b.current == ep {
		b.current = nil
	}
	b.mu.Unlock()
	if wasHealthy {
		b.log.Warn("API server unhealthy; failing over", "server", ep.host, "err", why)
		select {
		case b.probeNow <- struct{}{}:
		default:
		}
	}
}

// markUp records that ep answered a request sent at sent. An answer to a
// request sent before ep was marked down says nothing of it now: a
// request in flight when a server is killed may still complete.
func (b *Balancer) markUp(ep *endpoint, sent time.Time) {
	b.mu.Lock()
	if !ep.healthy && sent.Before(ep.downSince) {
		b.mu.Unlock()
		return
	}
	was := ep.healthy
	ep.healthy, ep.lastErr = true, ""
	b.mu.Unlock()
	if !was {
		b.log.Info("API server healthy again", "server", ep.host)
	}
}

// find returns the endpoint for host; b.mu held or not yet shared.
func (b *Balancer) find(host string) *endpoint {
	for _, e := range b.endpoints {
		if e.host == host {
			return e
		}
	}
	return nil
}

// serverTrouble reports whether a status says the server, rather than the
// request, is at fault: an internal error, or unavailable (not ready,
// shutting down, no store quorum), or a proxy in front of it failing.
func serverTrouble(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// notSent reports whether err means the request never reached the
// server: the connection or its TLS handshake could not be made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "TLS handshake timeout")
}

// watchedBody marks its server unhealthy when the response breaks off: a
// watch whose server died then moves to another at its next request.
type watchedBody struct {
	io.ReadCloser
	b   *Balancer
	ep  *endpoint
	ctx context.Context
}

func (w *watchedBody) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if err != nil && err != io.EOF && w.ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		w.b.markDown(w.ep, err.Error())
	}
	return n, err
}
