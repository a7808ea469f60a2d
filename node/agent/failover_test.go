package agent

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFailoverMovesToAReachableServer(t *testing.T) {
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hits = append(hits, r.Method+" "+string(body))
	}))
	defer srv.Close()
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	live := strings.TrimPrefix(srv.URL, "http://")
	f := newFailover(http.DefaultTransport, []string{dead, live})
	client := &http.Client{Transport: f}
	tests := []struct {
		name, method, body string
	}{
		{"get", http.MethodGet, ""},
		{"post with a body is resent", http.MethodPost, "payload"},
		{"sticks to the live one", http.MethodGet, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "http://"+dead+"/api", strings.NewReader(tt.body))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := hits[len(hits)-1]; got != tt.method+" "+tt.body {
				t.Errorf("server saw %q", got)
			}
		})
	}
	if f.current != 1 {
		t.Errorf("current = %d, want the live server", f.current)
	}
}

func TestFailoverGivesUpWhenAllAreDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	client := &http.Client{Transport: newFailover(http.DefaultTransport, []string{dead, dead})}
	if _, err := client.Get("http://" + dead + "/"); err == nil {
		t.Error("no error with every server down")
	}
}
