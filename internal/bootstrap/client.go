package bootstrap

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrCAMismatch is returned when the CA a server presents is not the one
// the token pins.
var ErrCAMismatch = errors.New("bootstrap: the server's CA does not match the token's hash: wrong token or a man in the middle")

// requestTimeout bounds one bootstrap request.
const requestTimeout = 15 * time.Second

// maxResponse bounds what a bootstrap response may hold.
const maxResponse = 1 << 20

// FetchCA reads the CA certificate from server's /cacerts without
// trusting the connection, and accepts it only when its hash is caHash
// and the server's own TLS certificate chains to it. It returns the CA
// PEM and the parsed certificate.
func FetchCA(ctx context.Context, server, caHash string) ([]byte, *x509.Certificate, error) {
	base, err := baseURL(server)
	if err != nil {
		return nil, nil, err
	}
	var peers []*x509.Certificate
	client := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			// Nothing is trusted yet: the hash check below decides.
			InsecureSkipVerify: true, //nolint:gosec
			MinVersion:         tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				peers = cs.PeerCertificates
				return nil
			},
		},
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+PathCACerts, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: fetching the cluster CA from %s: %w (is it an API server URL, https://HOST:6443?)", server, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: fetching the cluster CA from %s: %w", server, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("bootstrap: fetching the cluster CA from %s: %s (is it an API server URL, https://HOST:6443?)", server, resp.Status)
	}
	block, _ := pem.Decode(body)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("bootstrap: %s%s did not answer with a PEM certificate", base, PathCACerts)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: the CA from %s: %w", server, err)
	}
	if got := CAHash(ca); got != caHash {
		return nil, nil, fmt.Errorf("%w (%s has CA sha256 %s…, the token pins %s…)", ErrCAMismatch, server, got[:16], caHash[:16])
	}
	if err := verifyServer(peers, ca); err != nil {
		return nil, nil, fmt.Errorf("%w (%s serves with a certificate its CA did not sign: %v)", ErrCAMismatch, server, err)
	}
	return pem.EncodeToMemory(block), ca, nil
}

// verifyServer checks that the server's leaf certificate chains to ca.
func verifyServer(peers []*x509.Certificate, ca *x509.Certificate) error {
	if len(peers) == 0 {
		return errors.New("no certificate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	inter := x509.NewCertPool()
	for _, c := range peers[1:] {
		inter.AddCert(c)
	}
	_, err := peers[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// baseURL checks that server is an https URL and returns its scheme and
// host.
func baseURL(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("bootstrap: %q is not an API server URL (https://HOST:6443)", server)
	}
	return "https://" + u.Host, nil
}

// Client calls an API server's bootstrap endpoints over TLS that trusts
// only the cluster CA, authenticated by a bootstrap token or by a client
// certificate.
type Client struct {
	base   string
	caPEM  []byte
	bearer string
	http   *http.Client
}

// Connect fetches and checks the CA of server against the token (see
// FetchCA) and returns a client that authenticates with the token.
func Connect(ctx context.Context, server string, tok Token) (*Client, error) {
	caPEM, ca, err := FetchCA(ctx, server, tok.CAHash)
	if err != nil {
		return nil, err
	}
	base, _ := baseURL(server)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	c := newClient(base, caPEM, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	c.bearer = tok.Bearer()
	return c, nil
}

// NewCertClient returns a client of server that trusts caPEM and
// authenticates with cert, e.g. a node renewing its serving certificate.
func NewCertClient(server string, caPEM []byte, cert tls.Certificate) (*Client, error) {
	base, err := baseURL(server)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("bootstrap: no PEM certificate in the CA")
	}
	return newClient(base, caPEM, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

func newClient(base string, caPEM []byte, tlsCfg *tls.Config) *Client {
	return &Client{base: base, caPEM: caPEM, http: &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: tlsCfg}}}
}

// CAPEM returns the cluster CA certificate the client trusts, PEM.
func (c *Client) CAPEM() []byte { return c.caPEM }

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Sign asks the server to sign a node certificate request of the given
// usage, and returns the certificate, PEM.
func (c *Client) Sign(ctx context.Context, csrPEM []byte, usage string) ([]byte, error) {
	var resp CertificateResponse
	if err := c.do(ctx, http.MethodPost, PathCertificates, CertificateRequest{CSR: string(csrPEM), Usage: usage}, &resp); err != nil {
		return nil, err
	}
	if resp.Certificate == "" {
		return nil, errors.New("bootstrap: the server answered without a certificate")
	}
	return []byte(resp.Certificate), nil
}

// ServerBundle fetches what a joining server needs: the CA bundle and the
// store members.
func (c *Client) ServerBundle(ctx context.Context) (*ServerBundle, error) {
	var b ServerBundle
	if err := c.do(ctx, http.MethodGet, PathServerBundle, nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// do sends a JSON request and decodes the JSON answer into out; errors
// carry the server's message.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("bootstrap: %s %s%s: %w", method, c.base, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("bootstrap: %s %s%s: %w", method, c.base, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("bootstrap: %s refused the token: %s", c.base, statusMessage(data, resp.Status))
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("bootstrap: %s refused: %s", c.base, statusMessage(data, resp.Status))
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("bootstrap: %s %s%s: %s", method, c.base, path, statusMessage(data, resp.Status))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("bootstrap: decoding the answer of %s%s: %w", c.base, path, err)
	}
	return nil
}

// statusMessage extracts the message of a Kubernetes Status body.
func statusMessage(body []byte, fallback string) string {
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	if s := strings.TrimSpace(string(body)); s != "" && len(s) < 300 {
		return s
	}
	return fallback
}
