package bootstrap

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/pki"
)

func testCA(t *testing.T) *pki.CA {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if err := pki.Init(dir); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestNodeCSRPolicy(t *testing.T) {
	ip := []net.IP{net.ParseIP("10.0.0.5")}
	for _, tc := range []struct {
		name  string
		cn    string
		orgs  []string
		dns   []string
		ips   []net.IP
		usage string
		err   string
	}{
		{name: "client", cn: "system:node:n1", orgs: []string{NodesGroup}, usage: UsageClient},
		{name: "serving", cn: "system:node:n1", orgs: []string{NodesGroup}, dns: []string{"n1"}, ips: ip, usage: UsageServing},
		{name: "not a node", cn: "admin", orgs: []string{NodesGroup}, usage: UsageClient, err: "is not system:node:"},
		{name: "extra group", cn: "system:node:n1", orgs: []string{NodesGroup, "system:masters"}, usage: UsageClient, err: "organization"},
		{name: "client with names", cn: "system:node:n1", orgs: []string{NodesGroup}, dns: []string{"n1"}, usage: UsageClient, err: "no DNS names"},
		{name: "serving without names", cn: "system:node:n1", orgs: []string{NodesGroup}, usage: UsageServing, err: "at least one"},
		{name: "unknown usage", cn: "system:node:n1", orgs: []string{NodesGroup}, usage: "peer", err: "unknown certificate usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csrPEM, _, err := NewCSR(tc.cn, tc.orgs, tc.dns, tc.ips)
			if err != nil {
				t.Fatal(err)
			}
			csr, err := ParseCSR(csrPEM)
			if err != nil {
				t.Fatal(err)
			}
			node, err := NodeOf(csr, tc.usage)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NodeOf: %q, %v; want an error saying %q", node, err, tc.err)
				}
				return
			}
			if err != nil || node != "n1" {
				t.Fatalf("NodeOf: %q, %v", node, err)
			}
		})
	}
}

func TestSignCSRIssuesAVerifiableNodeCertificate(t *testing.T) {
	ca := testCA(t)
	csrPEM, keyPEM, err := NewCSR("system:node:n1", []string{NodesGroup}, []string{"n1"}, []net.IP{net.ParseIP("10.0.0.5")})
	if err != nil {
		t.Fatal(err)
	}
	csr, _ := ParseCSR(csrPEM)
	certPEM, err := SignCSR(ca, csr, UsageServing, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "n1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the signed certificate does not verify against the CA: %v", err)
	}
	if !slices.Equal(cert.Subject.Organization, []string{NodesGroup}) || cert.Subject.CommonName != "system:node:n1" {
		t.Errorf("subject %v", cert.Subject)
	}
	if len(keyPEM) == 0 || !strings.Contains(string(keyPEM), "PRIVATE KEY") {
		t.Errorf("no key returned")
	}
	if _, err := ParseCSR([]byte("garbage")); err == nil {
		t.Errorf("ParseCSR accepted garbage")
	}
}
