package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/pki"
	"cairn/node/kubelet/logs"
	"cairn/node/runtime"
)

// fileLogs serves the logs of files in a directory, named
// NAMESPACE_POD_CONTAINER.log.
type fileLogs struct{ dir string }

type statusError struct {
	code int
	msg  string
}

func (e statusError) Error() string   { return e.msg }
func (e statusError) HTTPStatus() int { return e.code }

func (f fileLogs) ContainerLog(_ context.Context, ns, pod, container string, previous bool) (Log, error) {
	if previous {
		return Log{}, statusError{http.StatusBadRequest, "no previous"}
	}
	path := filepath.Join(f.dir, fmt.Sprintf("%s_%s_%s.log", ns, pod, container))
	if _, err := os.Stat(path); err != nil {
		return Log{}, statusError{http.StatusNotFound, "pod not found"}
	}
	return Log{Path: path, Running: func() bool { return false }}, nil
}

// startServer serves cfg, with a serving certificate of a new cluster CA
// in dir, until the test ends; it returns the base URL and a client
// maker: a certificate for user in groups, or none for "".
func startServer(t *testing.T, dir string, cfg Config) (string, func(user string, groups ...string) *http.Client) {
	t.Helper()
	if err := pki.Init(filepath.Join(dir, "pki")); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS, err = ca.ServerConfig("n1", []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	client := func(user string, groups ...string) *http.Client {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if user != "" {
			cert, err := ca.IssueTLS(pki.CertRequest{CommonName: user, Organization: groups, Client: true})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	}
	return "https://" + ln.Addr().String(), client
}

func TestServerAuthenticatesAndServesLogs(t *testing.T) {
	dir := t.TempDir()
	var log []byte
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i, line := range []string{"one", "two", "three"} {
		log = append(log, logs.Format(logs.Record{Time: t0.Add(time.Duration(i) * time.Second), Stream: logs.Stdout, Content: []byte(line)})...)
	}
	if err := os.WriteFile(filepath.Join(dir, "ns_web_app.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "cairn_test 1\n") })
	base, client := startServer(t, dir, Config{Logs: fileLogs{dir: dir}, Metrics: metrics})
	tests := []struct {
		name     string
		client   *http.Client
		path     string
		wantCode int
		wantBody string
	}{
		{name: "healthz needs no certificate", client: client(""), path: "/healthz", wantCode: 200, wantBody: "ok"},
		{name: "logs need a certificate", client: client(""), path: "/containerLogs/ns/web/app", wantCode: 401},
		{name: "a node may not read logs", client: client("system:node:n2", "system:nodes"), path: "/containerLogs/ns/web/app", wantCode: 403},
		{name: "the API server may", client: client(APIServerUser), path: "/containerLogs/ns/web/app", wantCode: 200, wantBody: "one\ntwo\nthree\n"},
		{name: "masters may", client: client("admin", MastersGroup), path: "/containerLogs/ns/web/app?tailLines=1&timestamps=true",
			wantCode: 200, wantBody: "2024-05-01T10:00:02Z three\n"},
		{name: "limit bytes", client: client(APIServerUser), path: "/containerLogs/ns/web/app?limitBytes=5", wantCode: 200, wantBody: "one\nt"},
		{name: "since time", client: client(APIServerUser), path: "/containerLogs/ns/web/app?sinceTime=2024-05-01T10:00:01Z", wantCode: 200, wantBody: "two\nthree\n"},
		{name: "follow ends with the container", client: client(APIServerUser), path: "/containerLogs/ns/web/app?follow=true", wantCode: 200, wantBody: "one\ntwo\nthree\n"},
		{name: "unknown pod", client: client(APIServerUser), path: "/containerLogs/ns/nope/app", wantCode: 404, wantBody: "pod not found\n"},
		{name: "no previous", client: client(APIServerUser), path: "/containerLogs/ns/web/app?previous=true", wantCode: 400},
		{name: "bad query", client: client(APIServerUser), path: "/containerLogs/ns/web/app?tailLines=x", wantCode: 400},
		{name: "metrics for the API server", client: client(APIServerUser), path: "/metrics", wantCode: 200, wantBody: "cairn_test 1\n"},
		{name: "metrics need a certificate", client: client(""), path: "/metrics", wantCode: 401},
		{name: "unknown path (no Streams)", client: client(APIServerUser), path: "/exec/ns/web/app", wantCode: 404},
		{name: "unknown path needs a certificate too", client: client(""), path: "/pods", wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.client.Get(base + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, strings.TrimSpace(string(body)), tt.wantCode)
			}
			if tt.wantBody != "" && string(body) != tt.wantBody {
				t.Errorf("body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestNewNeedsTheClusterCA(t *testing.T) {
	if _, err := New(Config{TLS: &tls.Config{}, Logs: fileLogs{}}); err == nil {
		t.Error("a server without client CAs was accepted")
	}
}

// lookupStreams finds one running container, web/app in ns, and one pod
// sandbox; it runs nothing (node/agent's tests run exec, attach and
// port-forward end to end).
type lookupStreams struct{}

type notFound string

func (e notFound) Error() string   { return string(e) }
func (e notFound) HTTPStatus() int { return http.StatusNotFound }

func (lookupStreams) RunningContainer(_ context.Context, ns, pod, container string) (string, error) {
	if ns+"/"+pod+"/"+container != "ns/web/app" {
		return "", notFound("container not found")
	}
	return "c1", nil
}

func (lookupStreams) PodSandbox(_ context.Context, ns, pod string) (string, error) {
	if ns+"/"+pod != "ns/web" {
		return "", notFound("pod not found")
	}
	return "s1", nil
}

func (lookupStreams) Exec(context.Context, runtime.ExecRequest) (int, error) {
	return 0, errors.New("not run here")
}

func (lookupStreams) Attach(context.Context, runtime.AttachRequest) error {
	return errors.New("not run here")
}

func (lookupStreams) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("not run here")
}

// TestStreamsAreAuthorizedAndChecked covers what the kubelet API answers
// before upgrading an exec, attach or port-forward request.
func TestStreamsAreAuthorizedAndChecked(t *testing.T) {
	dir := t.TempDir()
	base, client := startServer(t, dir, Config{Logs: fileLogs{dir: dir}, Streams: lookupStreams{}})
	for _, tt := range []struct {
		name     string
		client   *http.Client
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{"exec needs a certificate", client(""), "POST", "/exec/ns/web/app?command=sh&stdout=true", 401, ""},
		{"a node may not exec", client("system:node:n2", "system:nodes"), "POST", "/exec/ns/web/app?command=sh&stdout=true", 403, ""},
		{"a node may not port-forward", client("system:node:n2", "system:nodes"), "POST", "/portForward/ns/web", 403, ""},
		{"exec needs a command", client(APIServerUser), "POST", "/exec/ns/web/app?stdout=true", 400, "at least one command"},
		{"exec needs a stream", client(APIServerUser), "POST", "/exec/ns/web/app?command=sh", 400, "at least one of stdin, stdout, stderr"},
		{"attach needs no command", client(APIServerUser), "POST", "/attach/ns/web/app?stdout=true", 400, "unable to upgrade"},
		{"a bad flag", client(APIServerUser), "GET", "/exec/ns/web/app?command=sh&tty=maybe", 400, `invalid tty "maybe"`},
		{"an unknown container", client(APIServerUser), "POST", "/exec/ns/web/nope?command=sh&stdout=true", 404, "container not found"},
		{"exec without an upgrade", client(APIServerUser), "POST", "/exec/ns/web/app?command=sh&stdout=true", 400, "unable to upgrade"},
		{"port-forward to an unknown pod", client(APIServerUser), "POST", "/portForward/ns/nope", 404, "pod not found"},
		{"port-forward without an upgrade", client(APIServerUser), "POST", "/portForward/ns/web", 400, "unable to upgrade"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tt.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("%d %q, want %d with %q", resp.StatusCode, strings.TrimSpace(string(body)), tt.wantCode, tt.wantBody)
			}
		})
	}
}
