package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDescribe(t *testing.T) {
	ca, _ := newTestCA(t)
	otherCA, _ := newTestCA(t)

	foreignPEM, _, err := otherCA.Issue(CertRequest{CommonName: "intruder", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	_, foreignErr := parseLeaf(t, foreignPEM).Verify(x509.VerifyOptions{Roots: ca.Pool()})

	serverPEM, _, err := ca.Issue(CertRequest{CommonName: "s1", DNSNames: []string{"s1.example"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	_, hostErr := parseLeaf(t, serverPEM).Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "s2.example"})

	clientPEM, _, err := ca.Issue(CertRequest{CommonName: "c", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	_, usageErr := parseLeaf(t, clientPEM).Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})

	expired := issueWindow(t, ca, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	_, expiredErr := expired.Verify(x509.VerifyOptions{Roots: ca.Pool()})
	future := issueWindow(t, ca, time.Now().Add(24*time.Hour), time.Now().Add(48*time.Hour))
	_, futureErr := future.Verify(x509.VerifyOptions{Roots: ca.Pool()})

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"another CA", foreignErr, "certificate signed by a different CA (another cluster's PKI dir?)"},
		{"another CA, wrapped", fmt.Errorf("transport: %w", foreignErr), "different CA"},
		{"expired", expiredErr, "certificate expired"},
		{"not yet valid", futureErr, "not yet valid"},
		{"wrong host", hostErr, "not valid for s2.example (it names s1.example)"},
		{"wrong usage", usageErr, "not valid for this use"},
		{"not a peer", &NotPeerError{Subject: "CN=cairn-admin,O=system:masters"}, "not a peer certificate (O=cairn:peers missing"},
		{"closed", io.EOF, "connection closed during the TLS handshake"},
		{"remote refusal", errors.New("remote error: tls: bad certificate"), "refused our certificate"},
		{"unknown", errors.New("something else"), "something else"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.err); !strings.Contains(got, tt.want) || (tt.want == "" && got != "") {
				t.Errorf("Describe(%v) = %q, want it to contain %q", tt.err, got, tt.want)
			}
		})
	}
}

// issueWindow issues a certificate valid only between from and to, which
// Issue cannot do on purpose.
func issueWindow(t *testing.T, ca *CA, from, to time.Time) *x509.Certificate {
	t.Helper()
	key, _, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	serial, err := newSerial()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "window"},
		NotBefore:    from,
		NotAfter:     to,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
