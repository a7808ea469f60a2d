package demoapp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestGetReadsEveryAnswerOfTheServer(t *testing.T) {
	id := Identity{Pod: "demo-abc", IP: "10.244.1.7", Node: "cairn-dev-n1"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, id) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()

	tests := []struct {
		name string
		path string
		opts GetOptions
		want string
	}{
		{"one request by default", "/", GetOptions{}, id.Greeting()},
		{"each request answered", "/", GetOptions{Count: 3}, strings.Repeat(id.Greeting(), 3)},
		{"health", "/healthz", GetOptions{}, "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Get(context.Background(), url+tt.path, tt.opts, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func TestGetRetriesAServiceThatIsNotUpYet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	t.Run("fails at once without retries", func(t *testing.T) {
		if err := Get(context.Background(), "http://"+addr, GetOptions{}, &bytes.Buffer{}); err == nil {
			t.Fatal("no error from a closed port")
		}
	})
	t.Run("succeeds once the server comes up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			time.Sleep(300 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return // the port was taken meanwhile; Get reports it
			}
			Serve(ctx, ln, Identity{Pod: "late", IP: "x", Node: "y"})
		}()
		var out bytes.Buffer
		if err := Get(ctx, "http://"+addr, GetOptions{RetryFor: 5 * time.Second}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "late") {
			t.Errorf("got %q", out.String())
		}
	})
}

func TestIdentityFromEnv(t *testing.T) {
	t.Setenv("POD_NAME", "demo-1")
	t.Setenv("POD_IP", "10.0.0.9")
	t.Setenv("NODE_NAME", "n1")
	if got, want := IdentityFromEnv().Greeting(), "hello from pod demo-1 (10.0.0.9) on node n1\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_IP", "")
	if id := IdentityFromEnv(); id.Pod == "" || id.IP == "" {
		t.Errorf("no fallback: %+v", id)
	}
}

func TestPSListsTheProcessesItSees(t *testing.T) {
	var out strings.Builder
	if err := PS("/proc", &out); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %s\n", os.Getpid(), strings.TrimSpace(strings.ReplaceAll(string(self), "\x00", " ")))
	if !strings.Contains(out.String(), want) {
		t.Errorf("ps does not list this test as %q:\n%s", want, out.String())
	}
}
