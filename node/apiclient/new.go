package apiclient

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// New returns a client configuration whose requests the returned Balancer
// spreads over the API servers. Run the Balancer for probes and endpoint
// learning; requests work without it. QPS and Burst are left to the
// caller.
func New(cfg Config) (*rest.Config, *Balancer, error) {
	cfg.defaults()
	base := &rest.Config{TLSClientConfig: cfg.TLS, BearerToken: cfg.BearerToken}
	if cfg.Kubeconfig != "" {
		var err error
		if base, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig); err != nil {
			return nil, nil, fmt.Errorf("apiclient: --kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		if len(cfg.Servers) == 0 && base.Host != "" {
			cfg.Servers = []string{base.Host}
		}
	}
	if len(cfg.Servers) == 0 {
		return nil, nil, fmt.Errorf("apiclient: no API server: pass --server")
	}
	var hosts []string
	for _, s := range cfg.Servers {
		h, err := parseServer(s)
		if err != nil {
			return nil, nil, err
		}
		hosts = append(hosts, h)
	}
	tlsConf, err := rest.TLSConfigFor(base)
	if err != nil {
		return nil, nil, fmt.Errorf("apiclient: TLS: %w", err)
	}
	if tlsConf == nil {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	b := newBalancer(cfg, newTransport(cfg, tlsConf), hosts)

	rc := &rest.Config{
		Host:            cfg.Servers[0],
		Transport:       b,
		BearerToken:     base.BearerToken,
		BearerTokenFile: base.BearerTokenFile,
		Username:        base.Username,
		Password:        base.Password,
		Impersonate:     base.Impersonate,
		AuthProvider:    base.AuthProvider,
		ExecProvider:    base.ExecProvider,
		UserAgent:       cfg.UserAgent,
		ContentConfig:   base.ContentConfig,
	}
	b.restConfig = rest.CopyConfig(rc)
	return rc, b, nil
}

// newTransport is the connection layer under the Balancer: HTTP/2 over
// TLS, with every timeout set to notice a dead server within seconds.
func newTransport(cfg Config, tlsConf *tls.Config) *http.Transport {
	dialer := &net.Dialer{
		Timeout: cfg.DialTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: cfg.KeepAlive, Interval: cfg.KeepAlive, Count: 3,
		},
	}
	return &http.Transport{
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   3 * cfg.DialTimeout,
		ForceAttemptHTTP2:     true,
		HTTP2:                 &http.HTTP2Config{SendPingTimeout: cfg.PingInterval, PingTimeout: cfg.PingTimeout, WriteByteTimeout: 3 * cfg.PingTimeout},
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
