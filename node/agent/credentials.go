package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"cairn/internal/bootstrap"
	"cairn/internal/pki"
	"cairn/node/apiclient"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Identity of a node's client certificate, as Kubernetes' node
// authorizer expects it.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// tokenCredentials reports whether the node's credentials come from a join
// token: --token, or the credentials an earlier token join left in the
// data dir when no other credentials are given.
func tokenCredentials(cfg *Config) bool {
	if cfg.Token != "" {
		return true
	}
	if cfg.Kubeconfig != "" || cfg.PKIDir != "" {
		return false
	}
	_, err := os.Stat(filepath.Join(cfg.DataDir, bootstrap.NodeKubeconfigFile))
	return err == nil
}

// nodeBootstrap is how the node gets and renews its credentials with a
// join token; they live in the data dir and are reused on restart.
func nodeBootstrap(cfg *Config, fallback string) bootstrap.NodeConfig {
	servers := cfg.Servers
	if len(servers) == 0 && fallback != "" {
		servers = []string{fallback}
	}
	return bootstrap.NodeConfig{Servers: servers, Token: cfg.Token, NodeName: cfg.NodeName, Dir: cfg.DataDir}
}

// bootstrapTimeout bounds getting the node's certificates with a token.
const bootstrapTimeout = time.Minute

// Rate limits of the agent's API client: a kubelet's pod workers, status
// updates and informers share them. Events go through a client of their
// own with the same limits, as the kubelet's eventRecordQPS: three
// events per started container would otherwise take most of the burst
// a node starting many pods needs for their status.
const (
	clientQPS   = 50
	clientBurst = 100
	eventQPS    = 50
	eventBurst  = 100
)

// apiConn is the agent's connection to the API: a client configuration
// whose requests the balancer spreads over the API servers, and the
// cluster CA the credentials named, which the kubelet API trusts too (the
// balanced configuration has no TLS fields left to read it from).
type apiConn struct {
	rest     *rest.Config
	balancer *apiclient.Balancer
	caData   []byte
	caFile   string
	// server is the first API server, where a token join gets the
	// kubelet's serving certificate.
	server string
}

// connect builds the API connection over every --server: from a join
// token (the node's client certificate is signed through the API server),
// from a kubeconfig, or with a client certificate minted from the cluster
// CA in PKIDir.
func connect(cfg *Config, log *slog.Logger) (*apiConn, error) {
	ac := apiclient.Config{Servers: cfg.Servers, UserAgent: "cairn-agent/" + cfg.NodeName, Logger: log.With("component", "apiclient")}
	conn := &apiConn{}
	switch {
	case tokenCredentials(cfg):
		ctx, cancel := context.WithTimeout(context.Background(), bootstrapTimeout)
		defer cancel()
		path, err := bootstrap.EnsureNodeKubeconfig(ctx, nodeBootstrap(cfg, ""))
		if err != nil {
			return nil, fmt.Errorf("agent: joining with --token: %w", err)
		}
		ac.Kubeconfig = path
	case cfg.Kubeconfig != "":
		ac.Kubeconfig = cfg.Kubeconfig
	case cfg.PKIDir != "":
		if len(cfg.Servers) == 0 {
			return nil, errors.New("agent: --server is required with --pki-dir")
		}
		ca, err := pki.LoadCA(cfg.PKIDir)
		if err != nil {
			return nil, fmt.Errorf("agent: --pki-dir: %w", err)
		}
		caPEM, err := os.ReadFile(filepath.Join(cfg.PKIDir, pki.CACertFile))
		if err != nil {
			return nil, fmt.Errorf("agent: --pki-dir: %w", err)
		}
		certPEM, keyPEM, err := ca.Issue(pki.CertRequest{CommonName: nodeUserPrefix + cfg.NodeName, Organization: []string{nodesGroup}, Client: true})
		if err != nil {
			return nil, fmt.Errorf("agent: minting the node's client certificate: %w", err)
		}
		ac.TLS = rest.TLSClientConfig{CAData: caPEM, CertData: certPEM, KeyData: keyPEM}
		conn.caData = caPEM
	default:
		return nil, errors.New("agent: no credentials: pass --token (a join token), --kubeconfig or --pki-dir (the cluster CA)")
	}
	if ac.Kubeconfig != "" {
		kc, err := clientcmd.BuildConfigFromFlags("", ac.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("agent: %s: %w", ac.Kubeconfig, err)
		}
		conn.caData, conn.caFile, conn.server = kc.TLSClientConfig.CAData, kc.TLSClientConfig.CAFile, kc.Host
	}
	if len(cfg.Servers) > 0 {
		conn.server = cfg.Servers[0]
	}
	rc, bal, err := apiclient.New(ac)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	rc.QPS, rc.Burst = clientQPS, clientBurst
	conn.rest, conn.balancer = rc, bal
	return conn, nil
}

// servingTLS is the kubelet API's TLS configuration: a certificate for
// the node's names and address, and the cluster CA to check clients'.
// With a join token the certificate is signed through the API server;
// with PKIDir both come from the CA; otherwise from the given files,
// the client CA defaulting to the API's.
func servingTLS(cfg *Config, conn *apiConn, nodeIP net.IP) (*tls.Config, error) {
	var cert tls.Certificate
	var pool *x509.CertPool
	switch {
	case tokenCredentials(cfg):
		ctx, cancel := context.WithTimeout(context.Background(), bootstrapTimeout)
		defer cancel()
		var caPEM []byte
		var err error
		cert, caPEM, err = bootstrap.EnsureServingCert(ctx, nodeBootstrap(cfg, conn.server), []string{cfg.NodeName, "localhost"}, []net.IP{nodeIP, net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("agent: the kubelet serving certificate: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("agent: the node's CA holds no certificate")
		}
	case cfg.PKIDir != "":
		ca, err := pki.LoadCA(cfg.PKIDir)
		if err != nil {
			return nil, fmt.Errorf("agent: --pki-dir: %w", err)
		}
		ips := []net.IP{nodeIP, net.IPv4(127, 0, 0, 1)}
		if cert, err = ca.IssueTLS(pki.CertRequest{CommonName: nodeUserPrefix + cfg.NodeName, Organization: []string{nodesGroup},
			DNSNames: []string{cfg.NodeName, "localhost"}, IPs: ips, Server: true}); err != nil {
			return nil, fmt.Errorf("agent: minting the kubelet serving certificate: %w", err)
		}
		pool = ca.Pool()
	case cfg.TLSCertFile != "" && cfg.TLSKeyFile != "":
		var err error
		if cert, err = tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("agent: --tls-cert-file: %w", err)
		}
		caPEM := conn.caData
		caFile := cfg.ClientCAFile
		if caFile == "" {
			caFile = conn.caFile
		}
		if caFile != "" {
			if caPEM, err = os.ReadFile(caFile); err != nil {
				return nil, fmt.Errorf("agent: --client-ca-file: %w", err)
			}
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("agent: no client CA for the kubelet API: pass --client-ca-file (the cluster's ca.crt)")
		}
	default:
		return nil, errors.New("agent: the kubelet API needs a serving certificate: pass --pki-dir, or --tls-cert-file and --tls-private-key-file")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
