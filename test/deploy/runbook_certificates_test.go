package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// peerCert returns the certificate a TLS server presents; the test only
// reads it, so it does not verify it.
func peerCert(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// fileCert reads the first certificate of a PEM file.
func fileCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(readFileString(t, path)))
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunbookCertificates follows docs/runbooks/certificates.md on a
// bootstrapped cluster: restarts give every server new certificates, the
// admin's files and kubeconfig are issued again, and a new CA (a new
// cluster restored from a snapshot) keeps the data and shuts out the old
// credentials.
func TestRunbookCertificates(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.bootstrap(t)
	blocks := readRunbook(t, "certificates.md")
	k := l.kubectl(t)
	k.must(t, "create", "configmap", "kept", "--from-literal=k=v")
	servers := []*machine{l.machine("s1"), l.machine("s2"), l.machine("s3")}
	s1 := servers[0]

	serials := map[string]string{}
	for _, m := range servers {
		serials[m.name] = peerCert(t, m.ip+":6443").SerialNumber.String()
	}
	l.run(t, sections(t, blocks, "Check", "Renew the servers")...)
	for _, m := range servers {
		c := peerCert(t, m.ip+":6443")
		if c.SerialNumber.String() == serials[m.name] {
			t.Errorf("%s serves the same certificate after its restart", m.name)
		}
		if time.Until(c.NotAfter) < 360*24*time.Hour {
			t.Errorf("%s's new certificate expires %s, want a year from now", m.name, c.NotAfter)
		}
	}

	admin := fileCert(t, s1.path("/etc/cairn/pki/admin.crt"))
	l.run(t, sections(t, blocks, "Re-issue the admin")...)
	renewed := fileCert(t, s1.path("/etc/cairn/pki/admin.crt"))
	if renewed.SerialNumber.Cmp(admin.SerialNumber) == 0 || renewed.Subject.CommonName != "cairn-admin" ||
		len(renewed.Subject.Organization) != 1 || renewed.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin.crt after re-issue: serial %v (was %v), subject %v", renewed.SerialNumber, admin.SerialNumber, renewed.Subject)
	}
	for _, m := range servers[1:] {
		if c := fileCert(t, m.path("/etc/cairn/pki/admin.crt")); c.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
			t.Errorf("%s did not get the new admin.crt", m.name)
		}
	}

	kubeconfig := s1.path("/etc/cairn/admin.kubeconfig")
	before := readFileString(t, kubeconfig)
	l.run(t, sections(t, blocks, "Re-issue a kubeconfig")...)
	if readFileString(t, kubeconfig) == before {
		t.Errorf("the admin kubeconfig is unchanged after its re-issue")
	}
	old := filepath.Join(t.TempDir(), "old.kubeconfig")
	if err := os.WriteFile(old, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	oldK := kubectl{bin: k.bin, env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + old}}
	oldK.must(t, "get", "configmap", "kept")

	ca := fileCert(t, s1.path("/etc/cairn/pki/ca.crt"))
	l.run(t, sections(t, blocks, "Replace the CA")...)
	if newCA := fileCert(t, s1.path("/etc/cairn/pki/ca.crt")); newCA.Equal(ca) {
		t.Fatalf("the CA is the same after its replacement")
	}
	if out := k.must(t, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Errorf("configmap kept after the CA replacement: %q", out)
	}
	if _, err := oldK.run(30*time.Second, "get", "configmap", "kept"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a kubeconfig of the old CA: %v; want it refused over its certificate", err)
	}
	l.checkAllRun(t, blocks)
}
