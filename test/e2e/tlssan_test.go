package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTLSSANNamesTheLoadBalancerInTheAPICertificate starts a server with
// --tls-san (repeated, and a comma list) and checks that clients that reach
// it by the load balancer's name or address accept its API certificate,
// while a name it was not given is still refused.
func TestTLSSANNamesTheLoadBalancerInTheAPICertificate(t *testing.T) {
	c := newTokenCluster(t, "s1")
	s1 := c.member(t, "s1")
	s1.start(t, c.args(s1, "--pki-dir", c.pki, "--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token,
		"--tls-san", "lb.example.com,10.0.0.10", "--tls-san", "api.example.com"))
	s1.waitHealthy(t)

	caPEM, err := os.ReadFile(filepath.Join(c.pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate in ca.crt")
	}
	var cert *x509.Certificate
	for deadline := time.Now().Add(20 * time.Second); cert == nil; time.Sleep(200 * time.Millisecond) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", c.apis["s1"], &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			cert = conn.ConnectionState().PeerCertificates[0]
			conn.Close()
		} else if time.Now().After(deadline) {
			t.Fatalf("the API of s1 did not answer: %v", err)
		}
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"lb.example.com", true},
		{"10.0.0.10", true},
		{"api.example.com", true},
		{"kubernetes", true},
		{"other.example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.name})
			if tc.ok && err != nil {
				t.Errorf("a client that reaches the API as %s refuses its certificate: %v (DNS names %v, IPs %v)", tc.name, err, cert.DNSNames, cert.IPAddresses)
			}
			if !tc.ok && err == nil {
				t.Errorf("the API certificate is valid for %s, which no flag named", tc.name)
			}
		})
	}
}
