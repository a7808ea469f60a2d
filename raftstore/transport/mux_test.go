package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// startMux serves a Mux on a loopback port, with a gRPC health service on
// its GRPC side, and stops both when the test ends.
func startMux(t *testing.T, serverTLS *tls.Config) *Mux {
	t.Helper()
	log, _ := newTestLogger()
	mux := NewMux(listen(t), serverTLS, log)
	served := make(chan error, 1)
	go func() { served <- mux.Serve() }()

	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(mux.GRPC())

	t.Cleanup(func() {
		gs.Stop()
		mux.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve after Close: %v", err)
		}
	})
	return mux
}

func TestMuxServesGRPCAndRaftOnOnePort(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	tests := []struct {
		name                 string
		serverTLS, clientTLS *tls.Config
	}{
		{"mutual TLS", cluster.peerServer, cluster.peerClient},
		{"insecure", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := startMux(t, tt.serverTLS)
			serveEcho(mux.Raft())
			addr := mux.Addr().String()

			// A raft-like stream: first byte is a message type.
			layer := NewStreamLayer(listen(t), nil, tt.clientTLS, nil)
			c, err := layer.Dial(raftAddr(addr), 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			roundTrip(t, c, "\x00append entries")

			conn, err := grpc.NewClient(addr, GRPCDialer(tt.clientTLS, nil)...)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatalf("health check through the mux: %v", err)
			}
			if resp.Status != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health status %v, want SERVING", resp.Status)
			}

			// The raft stream still works alongside gRPC.
			roundTrip(t, c, "\x01request vote")
		})
	}
}

func TestMuxRoutesForwardedWritesToTheProposeListener(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	mux := startMux(t, cluster.peerServer)
	raftConns := serveEcho(mux.Raft())
	serveEcho(mux.Propose())

	c, err := DialPeer(t.Context(), mux.Addr().String(), cluster.peerClient, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The echo gives back the first byte too: the listener's connections
	// start with it.
	roundTrip(t, c, string(rune(ProposeFirstByte))+"a batch")
	select {
	case <-raftConns:
		t.Fatal("a forwarded-write connection reached the raft listener")
	default:
	}
}

func TestMuxIdlePeerDoesNotBlockOthers(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	mux := startMux(t, cluster.peerServer)
	serveEcho(mux.Raft())
	addr := mux.Addr().String()

	// Completes the handshake, then says nothing.
	idle, err := dialTLS(t.Context(), newDialer(nil), addr, cluster.peerClient)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	start := time.Now()
	c, err := dialTLS(t.Context(), newDialer(nil), addr, cluster.peerClient)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "\x00behind an idle peer")
	if d := time.Since(start); d > time.Second {
		t.Errorf("a peer waited %v behind an idle one", d)
	}
}

func TestMuxRefusesNonPeerCertificates(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	log, logs := newTestLogger()
	mux := NewMux(listen(t), cluster.peerServer, log)
	defer mux.Close()
	go mux.Serve()
	accepted := serveEcho(mux.Raft())

	c, err := dialTLS(t.Context(), newDialer(nil), mux.Addr().String(), cluster.admin)
	if err == nil {
		expectRefused(t, c)
		c.Close()
	}
	logs.waitFor(t, "refused client", "not a peer certificate")
	select {
	case <-accepted:
		t.Fatal("the admin certificate reached the raft listener")
	default:
	}
}

func TestMuxCloseUnblocksEveryListener(t *testing.T) {
	mux := NewMux(listen(t), nil, nil)
	served := make(chan error, 1)
	go func() { served <- mux.Serve() }()
	errs := make(chan error, 3)
	for _, ln := range []net.Listener{mux.GRPC(), mux.Raft(), mux.Propose()} {
		go func() {
			_, err := ln.Accept()
			errs <- err
		}()
	}
	mux.Close()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("Accept still blocked after Close")
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve returned %v after Close, want nil", err)
	}
}
