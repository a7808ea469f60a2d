package pki

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"
	"time"
)

// newTestCA initialises a PKI dir in a temp dir and loads its CA.
func newTestCA(t *testing.T) (*CA, string) {
	t.Helper()
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatalf("Init: %v", err)
	}
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	return ca, dir
}

func parseLeaf(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatalf("parsing issued certificate: %v", err)
	}
	return cert
}

// handshake runs one TLS connection over loopback TCP and returns what each
// end saw. The server writes "ok" after a good handshake so the client also
// learns about refusals that TLS 1.3 reports only after its own handshake.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, serverCfg)
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			done <- err
			return
		}
		_, err = tc.Write([]byte("ok"))
		done <- err
	}()
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), clientCfg)
	if err == nil {
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadFull(tc, make([]byte, 2))
	}
	return <-done, err
}
