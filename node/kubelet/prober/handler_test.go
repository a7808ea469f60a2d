package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probedServer serves the paths HTTP probes are pointed at.
func probedServer(t *testing.T) (host string, port int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not today", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/needs-header", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t" || r.Host != "svc.local" || r.UserAgent() != UserAgent {
			w.WriteHeader(http.StatusForbidden)
		}
	})
	mux.HandleFunc("/redirect-here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, p, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	n, _ := strconv.Atoi(p)
	return h, n
}

func TestHTTPProbe(t *testing.T) {
	host, port := probedServer(t)
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	target := Target{Container: c, PodIP: host}
	tests := []struct {
		name    string
		action  corev1.HTTPGetAction
		timeout time.Duration
		want    Result
		msg     string
	}{
		{name: "ok by number", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port))}, want: Success},
		{name: "ok by port name", action: corev1.HTTPGetAction{Path: "ok", Port: intstr.FromString("http")}, want: Success},
		{name: "5xx fails", action: corev1.HTTPGetAction{Path: "/fail", Port: intstr.FromString("http")}, want: Failure,
			msg: "HTTP probe failed with statuscode: 503: not today"},
		{name: "headers and host", action: corev1.HTTPGetAction{Path: "/needs-header", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Token", Value: "t"}, {Name: "Host", Value: "svc.local"}}}, want: Success},
		{name: "missing header", action: corev1.HTTPGetAction{Path: "/needs-header", Port: intstr.FromString("http")}, want: Failure},
		{name: "same host redirect followed", action: corev1.HTTPGetAction{Path: "/redirect-here", Port: intstr.FromString("http")}, want: Success},
		{name: "off host redirect succeeds", action: corev1.HTTPGetAction{Path: "/redirect-away", Port: intstr.FromString("http")}, want: Success,
			msg: "Probe terminated redirects"},
		{name: "unknown port name", action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("nope")}, want: Failure,
			msg: `couldn't find port "nope"`},
		{name: "timeout", action: corev1.HTTPGetAction{Path: "/slow", Port: intstr.FromString("http")}, timeout: 100 * time.Millisecond,
			want: Failure, msg: "context deadline exceeded"},
	}
	r := &Runner{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Second
			}
			got, msg := r.Probe(context.Background(), corev1.ProbeHandler{HTTPGet: &tt.action}, timeout, target)
			if got != tt.want || !strings.Contains(msg, tt.msg) {
				t.Errorf("got %v %q, want %v %q", got, msg, tt.want, tt.msg)
			}
		})
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().(*net.TCPAddr).Port
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	defer ln.Close()
	tests := []struct {
		name string
		port int
		want Result
	}{{"open", open, Success}, {"closed", closedPort, Failure}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := (&Runner{}).Probe(context.Background(),
				corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(tt.port))}}, time.Second,
				Target{Container: &corev1.Container{}, PodIP: "127.0.0.1"})
			if got != tt.want {
				t.Errorf("got %v (%s), want %v", got, msg, tt.want)
			}
		})
	}
}

func TestHTTPHookIgnoresStatus(t *testing.T) {
	host, port := probedServer(t)
	target := Target{Container: &corev1.Container{}, PodIP: host}
	r := &Runner{}
	fail := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/fail", Port: intstr.FromInt32(int32(port))}}
	if err := r.Hook(context.Background(), fail, time.Second, target); err != nil {
		t.Errorf("hook answered 503: %v, want no error", err)
	}
	unreachable := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(1)}}
	if err := r.Hook(context.Background(), unreachable, time.Second, target); err == nil {
		t.Error("hook to a closed port succeeded")
	}
}

func TestResolvePort(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	tests := []struct {
		name    string
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{"number", intstr.FromInt32(80), 80, false},
		{"name", intstr.FromString("web"), 8080, false},
		{"numeric string", intstr.FromString("81"), 81, false},
		{"unknown name", intstr.FromString("db"), 0, true},
		{"zero", intstr.FromInt32(0), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePort(tt.port, c)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("got %d, %v", got, err)
			}
		})
	}
}
