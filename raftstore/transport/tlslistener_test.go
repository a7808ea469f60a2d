package transport

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTLSListenerRefusesStrangersAndSaysWhy(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	other := newTestPKI(t, "s9")
	// Trusts our CA, so the refusal comes from our server and is ours to explain.
	intruder := other.peerClient.Clone()
	intruder.RootCAs = cluster.peerClient.RootCAs

	tests := []struct {
		name    string
		client  *tls.Config
		wantLog string
	}{
		{"certificate from another CA", intruder, "certificate signed by a different CA"},
		{"peer of another cluster", other.peerClient, "refused our certificate (different CA"},
		{"admin certificate on the peer port", cluster.admin, "not a peer certificate (O=cairn:peers missing"},
		{"no certificate", &tls.Config{RootCAs: cluster.peerClient.RootCAs}, "no client certificate presented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, logs := newTestLogger()
			ln := NewTLSListener(listen(t), cluster.peerServer, log)
			defer ln.Close()
			accepted := serveEcho(ln)

			c, err := dialTLS(t.Context(), newDialer(nil), ln.Addr().String(), tt.client)
			if err == nil {
				expectRefused(t, c)
				c.Close()
			}
			line := logs.waitFor(t, "level=WARN", "refused client 127.0.0.1:", tt.wantLog)
			if strings.Count(logs.String(), "refused client") != 1 {
				t.Errorf("want the refusal logged once, log:\n%s", logs.String())
			}
			t.Logf("log line: %s", line)
			select {
			case addr := <-accepted:
				t.Fatalf("Accept returned the refused connection from %v", addr)
			default:
			}
		})
	}
}

func TestTLSListenerAcceptsPeers(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	ln := NewTLSListener(listen(t), cluster.peerServer, nil)
	defer ln.Close()
	serveEcho(ln)

	c, err := dialTLS(t.Context(), newDialer(nil), ln.Addr().String(), cluster.peerClient)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "hello")
}

func TestStalledClientDoesNotBlockAccept(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	log, logs := newTestLogger()
	ln := newTLSListener(listen(t), cluster.peerServer, log, 500*time.Millisecond)
	defer ln.Close()
	serveEcho(ln)

	// Opens TCP and never sends a ClientHello.
	stalled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()

	start := time.Now()
	c, err := dialTLS(t.Context(), newDialer(nil), ln.Addr().String(), cluster.peerClient)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "not blocked")
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("a good client waited %v behind a stalled one", d)
	}

	// The stalled client is cut off when the handshake times out.
	stalled.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := stalled.Read(make([]byte, 1)); err == nil {
		t.Error("stalled client read data; want its connection closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("stalled client still connected after the handshake timeout")
	}
	logs.waitFor(t, "level=WARN", "TLS handshake timed out")
}

func TestTLSListenerExplainsPlaintextClients(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	log, logs := newTestLogger()
	ln := NewTLSListener(listen(t), cluster.peerServer, log)
	defer ln.Close()
	serveEcho(ln)

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	logs.waitFor(t, "refused client", "not a TLS handshake")
}

func TestTLSListenerClose(t *testing.T) {
	tests := []struct {
		name string
		cfg  *tls.Config
	}{
		{"tls", newTestPKI(t, "s1").peerServer},
		{"insecure", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := NewTLSListener(listen(t), tt.cfg, nil)
			errc := make(chan error, 1)
			go func() {
				_, err := ln.Accept()
				errc <- err
			}()
			ln.Close()
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), "closed") {
					t.Errorf("Accept after Close returned %v, want a closed error", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Accept still blocked after Close")
			}
		})
	}
}

func TestNilConfigIsPlainTCP(t *testing.T) {
	inner := listen(t)
	if ln := NewTLSListener(inner, nil, nil); ln != inner {
		t.Fatalf("NewTLSListener with nil config returned %T, want the inner listener", ln)
	}
}
