package apiclient

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// server is an httptest TLS server counting the requests it answered.
type server struct {
	*httptest.Server
	hits   atomic.Int64
	status atomic.Int64 // answer status; 200 when zero
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if code := int(s.status.Load()); code != 0 && r.URL.Path != "/readyz" {
			w.WriteHeader(code)
			return
		}
		io.WriteString(w, "ok")
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// balancerFor returns a client through a Balancer over servers, which
// share httptest's certificate.
func balancerFor(t *testing.T, servers ...*server) (*http.Client, *Balancer) {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servers[0].Certificate().Raw})
	rc, b, err := New(Config{Servers: urls, TLS: rest.TLSClientConfig{CAData: ca}, ProbeInterval: 50 * time.Millisecond, NoEndpointLearning: true})
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rc.Transport, Timeout: 5 * time.Second}, b
}

func healthy(b *Balancer, host string) bool {
	for _, e := range b.Endpoints() {
		if e.Host == host {
			return e.Healthy
		}
	}
	return false
}

func host(s *server) string { return strings.TrimPrefix(s.URL, "https://") }

func TestReadsFailOverToALiveServer(t *testing.T) {
	dead, live := newServer(t), newServer(t)
	client, b := balancerFor(t, dead, live)
	b.mu.Lock()
	b.current = b.find(host(dead))
	b.mu.Unlock()
	dead.Close()
	for i := range 5 {
		resp, err := client.Get(dead.URL + "/api")
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		resp.Body.Close()
	}
	if live.hits.Load() != 5 {
		t.Fatalf("the live server answered %d of 5 requests", live.hits.Load())
	}
	if healthy(b, host(dead)) || !healthy(b, host(live)) {
		t.Fatalf("endpoints %+v: want the closed server unhealthy and the live one healthy", b.Endpoints())
	}
}

func TestRequestsStickToOneServer(t *testing.T) {
	a, c := newServer(t), newServer(t)
	client, _ := balancerFor(t, a, c)
	for range 10 {
		resp, err := client.Get(a.URL + "/api")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if a.hits.Load() != 10 && c.hits.Load() != 10 {
		t.Fatalf("requests spread %d/%d: want all on one server", a.hits.Load(), c.hits.Load())
	}
}

func TestServerErrors(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		status      int
		wantStatus  int
		wantRetried bool
	}{
		{"ReadRetriedOn503", http.MethodGet, http.StatusServiceUnavailable, http.StatusOK, true},
		{"ReadRetriedOn500", http.MethodGet, http.StatusInternalServerError, http.StatusOK, true},
		{"WriteNotRetriedOn503", http.MethodPost, http.StatusServiceUnavailable, http.StatusServiceUnavailable, false},
		{"NotFoundIsNoTrouble", http.MethodGet, http.StatusNotFound, http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sick, well := newServer(t), newServer(t)
			sick.status.Store(int64(tt.status))
			client, b := balancerFor(t, sick, well)
			b.mu.Lock()
			b.current = b.find(host(sick))
			b.mu.Unlock()
			req, _ := http.NewRequest(tt.method, sick.URL+"/api/v1/namespaces", strings.NewReader("{}"))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if retried := well.hits.Load() > 0; retried != tt.wantRetried {
				t.Fatalf("retried on the other server: %v, want %v", retried, tt.wantRetried)
			}
			if tt.status >= 500 && healthy(b, host(sick)) {
				t.Fatal("a server answering 5xx stays healthy")
			}
		})
	}
}

func TestWritesAreResentOnlyIfTheyNeverLeft(t *testing.T) {
	dead, live := newServer(t), newServer(t)
	client, b := balancerFor(t, dead, live)
	b.mu.Lock()
	b.current = b.find(host(dead))
	b.mu.Unlock()
	dead.Close() // refused connections: the write never left
	resp, err := client.Post(dead.URL+"/api/v1/namespaces", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatalf("a write whose connection was refused was not sent to the live server: %v", err)
	}
	resp.Body.Close()
	if live.hits.Load() != 1 {
		t.Fatalf("live server got %d requests, want 1", live.hits.Load())
	}
}

func TestProbesBringAServerBack(t *testing.T) {
	a, c := newServer(t), newServer(t)
	_, b := balancerFor(t, a, c)
	b.markDown(b.find(host(a)), "test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		b.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !healthy(b, host(a)) {
		if time.Now().After(deadline) {
			t.Fatalf("a ready server stays unhealthy: %+v", b.Endpoints())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseServers(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"https://10.0.0.1:6443,https://10.0.0.2:6443", "https://10.0.0.1:6443 https://10.0.0.2:6443", false},
		{" https://a:6443/ , ,https://b ", "https://a:6443 https://b", false},
		{"http://10.0.0.1:6443", "", true},
		{"10.0.0.1:6443", "", true},
		{"https://a:6443/prefix", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseServers(tt.in)
			if (err != nil) != tt.wantErr || strings.Join(got, " ") != tt.want {
				t.Fatalf("ParseServers(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

// An answer to a request sent before the server was marked down (it was
// in flight when the server died) must not mark it healthy again.
func TestALateAnswerDoesNotReviveAServer(t *testing.T) {
	s := newServer(t)
	_, b := balancerFor(t, s)
	ep := b.find(host(s))
	sent := time.Now()
	b.markDown(ep, "killed")
	b.markUp(ep, sent)
	if healthy(b, host(s)) {
		t.Fatal("an answer sent before the failure revived the server")
	}
	b.markUp(ep, time.Now())
	if !healthy(b, host(s)) {
		t.Fatal("an answer sent after the failure did not revive the server")
	}
}
