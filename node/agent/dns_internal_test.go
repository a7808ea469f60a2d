package agent

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/internal/testcluster"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
)

// The node's DNS server starts on the gateway of the podCIDR it is
// given; when the port is taken there, the pods are not pointed at it.
func TestNodeDNSServesOnTheGatewayOrStepsAside(t *testing.T) {
	privtest.Require(t, privtest.CapNetBindService)
	c := testcluster.New(t, 1)
	inf := informers.NewSharedInformerFactory(c.Client(0), 0)
	defer inf.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := newNodeDNS(ctx, &Config{}, inf, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()

	// Loopback stands in for the bridge: 127.0.53.1 is the "gateway".
	d.podNetworkReady("127.0.53.0/24")
	addr, ok := d.address()
	if !ok || addr.String() != "127.0.53.1" {
		t.Fatalf("address %v %v, want 127.0.53.1", addr, ok)
	}
	m := new(dns.Msg)
	m.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	var resp *dns.Msg
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		resp, _, err = (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, "127.0.53.1:53")
		if err == nil && resp.Rcode == dns.RcodeSuccess {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node's DNS did not answer kubernetes.default: %v %v", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(resp.Answer) != 1 {
		t.Errorf("kubernetes.default: %v", resp.Answer)
	}

	// Another server already holds the port on the next gateway.
	taken, err := net.ListenPacket("udp", "127.0.54.1:53")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	d.podNetworkReady("127.0.54.0/24")
	if addr, ok := d.address(); ok {
		t.Errorf("with port 53 taken on the gateway, pods would be sent to %v", addr)
	}
	if _, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, "127.0.53.1:53"); err == nil {
		t.Error("the server on the old gateway still answers after the podCIDR changed")
	}
}
