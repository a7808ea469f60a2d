package apiclient

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Defaults of Config.
const (
	DefaultDialTimeout           = time.Second
	DefaultKeepAlive             = 2 * time.Second
	DefaultPingInterval          = 2 * time.Second
	DefaultPingTimeout           = 2 * time.Second
	DefaultResponseHeaderTimeout = 10 * time.Second
	DefaultProbeInterval         = time.Second
)

// Config configures the client side of an agent's API connection.
type Config struct {
	// Servers are the API servers' URLs (--server); with a Kubeconfig, its
	// server when empty.
	Servers []string
	// Kubeconfig gives the credentials and CA, and the server when Servers
	// is empty.
	Kubeconfig string
	// TLS gives the CA and client certificate when there is no Kubeconfig.
	TLS rest.TLSClientConfig
	// BearerToken authenticates requests when there is no Kubeconfig (a
	// client certificate in TLS can do it instead).
	BearerToken string
	// UserAgent is sent with every request.
	UserAgent string
	Logger    *slog.Logger

	// DialTimeout bounds a TCP connect (DefaultDialTimeout): a server that
	// does not answer is skipped within it.
	DialTimeout time.Duration
	// KeepAlive is the TCP keepalive idle time and interval
	// (DefaultKeepAlive); three unanswered probes close the connection.
	KeepAlive time.Duration
	// PingInterval is how long an HTTP/2 connection may stay silent before
	// it is pinged (DefaultPingInterval), and PingTimeout how long the
	// ping may wait for its answer before the connection and its watches
	// are dropped (DefaultPingTimeout).
	PingInterval, PingTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers
	// (DefaultResponseHeaderTimeout); watches get theirs at once.
	ResponseHeaderTimeout time.Duration
	// ProbeInterval is how often unhealthy servers are probed
	// (DefaultProbeInterval).
	ProbeInterval time.Duration
	// NoEndpointLearning keeps the Balancer to Servers, ignoring the
	// kubernetes Service's endpoints.
	NoEndpointLearning bool
}

func (c *Config) defaults() {
	d := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	d(&c.DialTimeout, DefaultDialTimeout)
	d(&c.KeepAlive, DefaultKeepAlive)
	d(&c.PingInterval, DefaultPingInterval)
	d(&c.PingTimeout, DefaultPingTimeout)
	d(&c.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	d(&c.ProbeInterval, DefaultProbeInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ParseServers splits a comma-separated --server value into URLs,
// checking each is https://host:port (https://host means port 443).
func ParseServers(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, err := parseServer(f); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSuffix(f, "/"))
	}
	if len(out) == 0 {
		return nil, errors.New("apiclient: --server lists no API server")
	}
	return out, nil
}

// parseServer returns a server URL's host:port.
func parseServer(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Scheme != "https" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("apiclient: --server %q is not an https://host:port URL", s)
	}
	if u.Port() == "" {
		return u.Host + ":443", nil
	}
	return u.Host, nil
}
