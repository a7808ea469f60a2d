package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"cairn/node/dns"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
)

// nodeDNS runs the node's cluster DNS server on the pod network's
// gateway, the address every pod of the node reaches without a route,
// once the node has its podCIDR.
type nodeDNS struct {
	ctx       context.Context
	informers informers.SharedInformerFactory
	domain    string
	netns     string
	metrics   *dns.Metrics
	log       *slog.Logger

	mu     sync.Mutex
	addr   netip.Addr // serving there when valid
	cancel context.CancelFunc
	done   chan struct{}
}

// newNodeDNS prepares the server; it shares inf, which lives as long as
// ctx, with the agent's other watchers of Services and EndpointSlices.
func newNodeDNS(ctx context.Context, cfg *Config, inf informers.SharedInformerFactory, reg prometheus.Registerer, log *slog.Logger) (*nodeDNS, error) {
	metrics, err := dns.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &nodeDNS{ctx: ctx, informers: inf, domain: cfg.Kubelet.ClusterDomain, netns: cfg.NetNS, metrics: metrics, log: log}, nil
}

// podNetworkReady (re)starts the server on the gateway of podCIDR. A
// server that cannot start is logged, and the node's pods then get the
// host's resolvers rather than a server that does not answer.
func (d *nodeDNS) podNetworkReady(podCIDR string) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		d.log.Error("cluster DNS not started: bad podCIDR", "podCIDR", podCIDR, "err", err)
		return
	}
	gw := prefix.Masked().Addr().Next()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.addr == gw {
		return
	}
	d.stopLocked()
	s, err := dns.New(dns.Config{Informers: d.informers, Domain: d.domain, Addr: netip.AddrPortFrom(gw, 53), NetNS: d.netns,
		Metrics: d.metrics, Logger: d.log})
	if err == nil {
		err = s.Listen()
	}
	if err != nil {
		d.log.Error("cluster DNS not started: pods on this node get the host's resolvers (or start the agent with --cluster-dns)", "err", err)
		return
	}
	// Informers New asked for start now, once: they outlive this server.
	d.informers.Start(d.ctx.Done())
	ctx, cancel := context.WithCancel(d.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Error("cluster DNS stopped", "err", err)
		}
	}()
	d.addr, d.cancel, d.done = gw, cancel, done
}

// address is where the server answers, once it does.
func (d *nodeDNS) address() (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr, d.addr.IsValid()
}

func (d *nodeDNS) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

func (d *nodeDNS) stopLocked() {
	if d.cancel != nil {
		d.cancel()
		<-d.done
	}
	d.addr, d.cancel, d.done = netip.Addr{}, nil, nil
}
