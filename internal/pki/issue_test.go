package pki

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAgainstTheCA(t *testing.T) {
	ca, _ := newTestCA(t)
	tests := []struct {
		name       string
		req        CertRequest
		wantUsages []x509.ExtKeyUsage
		verifyHost string
	}{
		{
			name: "server with DNS and IP names",
			req: CertRequest{
				CommonName: "s1",
				DNSNames:   []string{"s1.example", "localhost"},
				IPs:        []net.IP{net.ParseIP("127.0.0.11")},
				Server:     true,
			},
			wantUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			verifyHost: "127.0.0.11",
		},
		{
			name:       "client with groups",
			req:        CertRequest{CommonName: "alice", Organization: []string{"dev", "ops"}, Client: true},
			wantUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		},
		{
			name: "peer serving and dialing",
			req: CertRequest{
				CommonName: "s2", Organization: []string{PeerOrganization},
				DNSNames: []string{"s2.example"}, Server: true, Client: true,
			},
			wantUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			verifyHost: "s2.example",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.Issue(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(keyPEM), "PRIVATE KEY") {
				t.Errorf("key is not PEM: %q", keyPEM)
			}
			cert := parseLeaf(t, certPEM)
			if cert.Subject.CommonName != tt.req.CommonName || !slices.Equal(cert.Subject.Organization, tt.req.Organization) {
				t.Errorf("subject %v, want CN=%s O=%v", cert.Subject, tt.req.CommonName, tt.req.Organization)
			}
			if !slices.Equal(cert.DNSNames, tt.req.DNSNames) {
				t.Errorf("DNS names %v, want %v", cert.DNSNames, tt.req.DNSNames)
			}
			if len(cert.IPAddresses) != len(tt.req.IPs) {
				t.Errorf("IPs %v, want %v", cert.IPAddresses, tt.req.IPs)
			}
			if !slices.Equal(cert.ExtKeyUsage, tt.wantUsages) {
				t.Errorf("usages %v, want %v", cert.ExtKeyUsage, tt.wantUsages)
			}
			if cert.IsCA {
				t.Error("leaf certificate is a CA")
			}
			if days := time.Until(cert.NotAfter).Hours() / 24; days < 364 || days > 366 {
				t.Errorf("valid for %.0f more days, want the 1 year default", days)
			}
			for _, usage := range tt.wantUsages {
				opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}}
				if usage == x509.ExtKeyUsageServerAuth {
					opts.DNSName = tt.verifyHost
				}
				if _, err := cert.Verify(opts); err != nil {
					t.Errorf("verify for usage %v: %v", usage, err)
				}
			}
		})
	}
}

func TestIssueValidity(t *testing.T) {
	ca, _ := newTestCA(t)
	tests := []struct {
		name     string
		validity time.Duration
		want     time.Time
	}{
		{"explicit", time.Hour, time.Now().Add(time.Hour)},
		{"capped at the CA's expiry", 20 * CAValidity, ca.Cert.NotAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, _, err := ca.Issue(CertRequest{CommonName: "x", Client: true, Validity: tt.validity})
			if err != nil {
				t.Fatal(err)
			}
			got := parseLeaf(t, certPEM).NotAfter
			if d := got.Sub(tt.want); d < -time.Minute || d > time.Minute {
				t.Errorf("NotAfter %v, want about %v", got, tt.want)
			}
		})
	}
}

func TestIssueRejectsIncompleteRequests(t *testing.T) {
	ca, _ := newTestCA(t)
	tests := []struct {
		name    string
		req     CertRequest
		wantErr string
	}{
		{"no common name", CertRequest{Client: true}, "no common name"},
		{"no usage", CertRequest{CommonName: "x"}, "neither for a server nor for a client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ca.Issue(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIssueTLSSetsLeaf(t *testing.T) {
	ca, _ := newTestCA(t)
	cert, err := ca.IssueTLS(CertRequest{CommonName: "x", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if cert.Leaf == nil || cert.Leaf.Subject.CommonName != "x" || cert.PrivateKey == nil {
		t.Fatalf("IssueTLS returned leaf %v, key set %v", cert.Leaf, cert.PrivateKey != nil)
	}
}

func TestSplitHostsPutsEachHostInTheRightSANList(t *testing.T) {
	dns, ips := splitHosts([]string{"s1.example", "127.0.0.11:2380", "[::1]:2380", "::1", "", "s1.example", "localhost", "127.0.0.11"})
	if !slices.Equal(dns, []string{"s1.example", "localhost"}) {
		t.Errorf("DNS names %v", dns)
	}
	var got []string
	for _, ip := range ips {
		got = append(got, ip.String())
	}
	if !slices.Equal(got, []string{"127.0.0.11", "::1"}) {
		t.Errorf("IPs %v", got)
	}
}
