package gossip

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"NoNodeName", func(c *Config) { c.NodeName = "" }, "NodeName"},
		{"NoClient", func(c *Config) { c.Client = nil }, "Client"},
		{"BadListen", func(c *Config) { c.BindAddr = "7946" }, "--gossip-listen"},
		{"BadJoin", func(c *Config) { c.Join = []string{"10.0.0.1"} }, "--gossip-join"},
		{"NamedAdvertise", func(c *Config) { c.AdvertiseAddr = "node-1:7946" }, "advertise"},
		{"ShortKey", func(c *Config) { c.SecretKey = []byte("short") }, "16, 24 or 32"},
		{"ProbeTimeoutTooLong", func(c *Config) {
			c.Timings = Timings{ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond}
		}, "probe timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{NodeName: "a", Client: fake.NewClientset()}
			tt.mod(&c)
			err := c.check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("check() = %v, want an error about %q", err, tt.want)
			}
		})
	}
	c := Config{NodeName: "a", Client: fake.NewClientset()}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	if c.BindAddr != ":7946" || c.Timings != DefaultTimings() {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestGossipAddr(t *testing.T) {
	g := &Gossip{addr: "10.0.0.9:7950"}
	withIP := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "b"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
	}}}
	published := withIP.DeepCopy()
	published.Annotations = map[string]string{AddressAnnotation: "10.0.0.2:8000"}
	tests := []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"Published", published, "10.0.0.2:8000"},
		{"InternalIPOnOurPort", withIP, "10.0.0.2:7950"},
		{"Nothing", &corev1.Node{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.gossipAddr(tt.node); got != tt.want {
				t.Fatalf("gossipAddr = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDialCarriesMemberlistConnections(t *testing.T) {
	var dials atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	a, err := New(Config{NodeName: "a", BindAddr: "127.0.0.1:0", Client: fake.NewClientset(), Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(Config{NodeName: "b", BindAddr: "127.0.0.1:0", Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Addr() == "127.0.0.1:0" || a.Addr() == b.Addr() {
		t.Fatalf("advertised addresses %s and %s: want the ports picked", a.Addr(), b.Addr())
	}
	if _, err := a.ml.Join([]string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	if dials.Load() == 0 {
		t.Fatal("joining did not go through Config.Dial")
	}
	if got := len(a.Members()); got != 2 {
		t.Fatalf("a sees %d members after joining b, want 2", got)
	}
}
