package transport

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func raftAddr(s string) raft.ServerAddress { return raft.ServerAddress(s) }

func TestStreamLayerEchoesOverMutualTLS(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	tests := []struct {
		name                 string
		serverTLS, clientTLS *tls.Config
		sourceIP             net.IP
	}{
		{"mutual TLS", cluster.peerServer, cluster.peerClient, nil},
		{"mutual TLS from a bound source address", cluster.peerServer, cluster.peerClient, net.ParseIP("127.0.0.2")},
		{"insecure", nil, nil, net.ParseIP("127.0.0.3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			advertise := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}
			ln := NewTLSListener(listen(t), tt.serverTLS, nil)
			server := NewStreamLayer(ln, advertise, tt.clientTLS, nil)
			defer server.Close()
			if server.Addr() != advertise {
				t.Errorf("Addr() = %v, want the advertised %v", server.Addr(), advertise)
			}
			remotes := serveEcho(server)

			client := NewStreamLayer(listen(t), nil, tt.clientTLS, tt.sourceIP)
			c, err := client.Dial(raftAddr(ln.Addr().String()), 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			roundTrip(t, c, "\x00hello raft")

			remote := (<-remotes).(*net.TCPAddr)
			wantIP := tt.sourceIP
			if wantIP == nil {
				wantIP = net.ParseIP("127.0.0.1")
			}
			if !remote.IP.Equal(wantIP) {
				t.Errorf("server saw the dial come from %v, want %v", remote.IP, wantIP)
			}
		})
	}
}

func TestStreamLayerDialExplainsRefusals(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	other := newTestPKI(t, "s9")
	ln := NewTLSListener(listen(t), cluster.peerServer, nil)
	defer ln.Close()
	serveEcho(ln)

	tests := []struct {
		name    string
		addr    string
		client  *tls.Config
		wantErr string
	}{
		{"server of another cluster", ln.Addr().String(), other.peerClient, "certificate signed by a different CA"},
		{"nobody listening", "127.0.0.1:1", cluster.peerClient, "transport: dialing 127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layer := NewStreamLayer(listen(t), nil, tt.client, nil)
			c, err := layer.Dial(raftAddr(tt.addr), 3*time.Second)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Dial error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNetworkTransportSendsAppendEntriesOverMutualTLS(t *testing.T) {
	cluster := newTestPKI(t, "s1")
	newNode := func() *raft.NetworkTransport {
		mux := NewMux(listen(t), cluster.peerServer, nil)
		go mux.Serve()
		t.Cleanup(func() { mux.Close() })
		layer := NewStreamLayer(mux.Raft(), mux.Addr(), cluster.peerClient, nil)
		trans := raft.NewNetworkTransport(layer, 2, 3*time.Second, io.Discard)
		t.Cleanup(func() { trans.Close() })
		return trans
	}
	leader, follower := newNode(), newNode()

	received := make(chan *raft.AppendEntriesRequest, 1)
	go func() {
		select {
		case rpc := <-follower.Consumer():
			req := rpc.Command.(*raft.AppendEntriesRequest)
			received <- req
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[len(req.Entries)-1].Index, Success: true}, nil)
		case <-time.After(5 * time.Second):
		}
	}()

	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ID: []byte("s1"), Addr: []byte(leader.LocalAddr())},
		Term:              7,
		Entries:           []*raft.Log{{Index: 1, Term: 7, Type: raft.LogCommand, Data: []byte("put k v")}},
		LeaderCommitIndex: 1,
	}
	var resp raft.AppendEntriesResponse
	if err := leader.AppendEntries("s2", follower.LocalAddr(), req, &resp); err != nil {
		t.Fatalf("AppendEntries: %v", err)
	}
	if !resp.Success || resp.Term != 7 || resp.LastLog != 1 {
		t.Errorf("response %+v, want success at term 7, last log 1", resp)
	}
	got := <-received
	if len(got.Entries) != 1 || string(got.Entries[0].Data) != "put k v" {
		t.Errorf("follower received %+v", got.Entries)
	}
}
