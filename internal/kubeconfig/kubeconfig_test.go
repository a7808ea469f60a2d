package kubeconfig

import (
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"testing"

	"cairn/internal/pki"

	"k8s.io/client-go/tools/clientcmd"
)

func TestBuildGivesAUsableClientConfig(t *testing.T) {
	dir := t.TempDir()
	if err := pki.Init(dir); err != nil {
		t.Fatal(err)
	}
	ca, _ := pki.LoadCA(dir)
	b, err := Build(ca, Options{Servers: []string{"https://127.0.0.1:6443"}, User: "jane", Groups: []string{"dev"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jane.kubeconfig")
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" || len(rc.TLSClientConfig.CAData) == 0 {
		t.Fatalf("rest config: %+v", rc)
	}
	block, _ := pem.Decode(rc.TLSClientConfig.CertData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "jane" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "dev" {
		t.Fatalf("certificate subject %v", cert.Subject)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("certificate does not verify as a client certificate: %v", err)
	}
	if _, err := Build(ca, Options{User: "x"}); err == nil {
		t.Fatal("a kubeconfig without a server was built")
	}
}
