package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
)

// ServerConfig mints a serving certificate for name, valid for hosts plus
// localhost and 127.0.0.1, and returns a TLS configuration that requires
// clients to present a certificate signed by the CA. The certificate is
// also usable as a client certificate, so a server can dial its peers'
// client ports with the same configuration.
func (ca *CA) ServerConfig(name string, hosts []string) (*tls.Config, error) {
	cert, err := ca.issueForHosts(name, nil, hosts)
	if err != nil {
		return nil, err
	}
	pool := ca.Pool()
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// PeerConfigs mints a peer certificate for name (O=PeerOrganization, valid
// for hosts plus localhost and 127.0.0.1) and returns the configurations for
// the two ends of a peer connection. Both ends require the other to hold a
// peer certificate signed by the CA: a client or admin certificate from the
// same CA is refused on the peer port.
//
// The server configuration offers ALPN "h2" because the peer port also
// carries gRPC, whose clients insist on negotiating it; raft streams offer
// no ALPN and are unaffected.
func (ca *CA) PeerConfigs(name string, hosts []string) (server, client *tls.Config, err error) {
	cert, err := ca.issueForHosts(name, []string{PeerOrganization}, hosts)
	if err != nil {
		return nil, nil, err
	}
	pool := ca.Pool()
	server = &tls.Config{
		Certificates:     []tls.Certificate{cert},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        pool,
		MinVersion:       tls.VersionTLS12,
		NextProtos:       []string{"h2"},
		VerifyConnection: requirePeer,
	}
	client = &tls.Config{
		Certificates:     []tls.Certificate{cert},
		RootCAs:          pool,
		MinVersion:       tls.VersionTLS12,
		VerifyConnection: requirePeer,
	}
	return server, client, nil
}

// ClientConfig builds the TLS configuration of a tool that talks to a
// server: it trusts the CA in caFile and, when certFile and keyFile are
// given, presents that client certificate.
func ClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, errors.New("pki: no CA certificate given: pass --cacert (the ca.crt of the cluster's PKI dir)")
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("pki: a client certificate needs both --cert and --key")
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("pki: reading CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("pki: %s holds no PEM certificate", caFile)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("pki: loading client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// issueForHosts issues a certificate usable both to serve and to dial, valid
// for hosts plus the loopback names every server answers on.
func (ca *CA) issueForHosts(name string, org []string, hosts []string) (tls.Certificate, error) {
	dns, ips := splitHosts(append(slices.Clone(hosts), "localhost", "127.0.0.1"))
	return ca.IssueTLS(CertRequest{
		CommonName:   name,
		Organization: org,
		DNSNames:     dns,
		IPs:          ips,
		Server:       true,
		Client:       true,
	})
}

// splitHosts sorts hosts into DNS names and IPs for the certificate's SANs,
// dropping duplicates and ports (hosts are often advertise addresses).
func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// requirePeer refuses the other end of a connection unless its verified
// certificate carries PeerOrganization.
func requirePeer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return &NotPeerError{}
	}
	leaf := cs.PeerCertificates[0]
	if !slices.Contains(leaf.Subject.Organization, PeerOrganization) {
		return &NotPeerError{Subject: leaf.Subject.String()}
	}
	return nil
}
