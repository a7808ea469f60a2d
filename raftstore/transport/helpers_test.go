package transport

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/pki"
)

// testPKI is one cluster's CA with the peer and admin configurations built
// from it.
type testPKI struct {
	dir                    string
	peerServer, peerClient *tls.Config
	admin                  *tls.Config // admin client certificate, trusts the CA
}

func newTestPKI(t *testing.T, name string) testPKI {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Init(dir); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	server, client, err := ca.PeerConfigs(name, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pki.ClientConfig(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.AdminCertFile), filepath.Join(dir, pki.AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{dir: dir, peerServer: server, peerClient: client, admin: admin}
}

// logBuffer collects log output written from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the log holds a line with every one of parts.
func (b *logBuffer) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		for line := range strings.Lines(b.String()) {
			if containsAll(line, parts) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q; log:\n%s", parts, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serveEcho echoes every connection accepted from ln and reports each
// connection's remote address on the returned channel.
func serveEcho(ln net.Listener) <-chan net.Addr {
	remotes := make(chan net.Addr, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case remotes <- c.RemoteAddr():
			default:
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return remotes
}

// roundTrip writes msg on c and expects it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v (%s)", err, pki.Describe(err))
	}
	if string(got) != msg {
		t.Fatalf("echo %q, want %q", got, msg)
	}
}

// expectRefused checks that c, which completed its own side of the
// handshake, is dropped by the server before any data comes back.
func expectRefused(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(c, "\x00hello")
	if n, err := c.Read(make([]byte, 16)); err == nil {
		t.Fatalf("refused client read %d bytes", n)
	}
}
