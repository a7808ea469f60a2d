package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"

	"cairn/internal/nsthread"
	"cairn/node/gossip"

	"k8s.io/client-go/kubernetes"
)

// DefaultGossipListen is the --gossip-listen of `cairn agent`: every
// address, at gossip.DefaultPort.
const DefaultGossipListen = "0.0.0.0:7946"

// startGossip joins the agents' gossip, which reports peers that die, and
// returns how to stop it: it leaves the cluster gracefully, so peers know
// the agent stopped rather than died. Without
// GossipListen it does nothing. With NetNS the sockets are bound inside
// the node's namespace, and memberlist's TCP connections dialled from it.
func startGossip(ctx context.Context, cfg *Config, client kubernetes.Interface, nodeIP net.IP,
	dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) (func(), error) {
	if cfg.GossipListen == "" {
		log.Info("peer gossip off (no --gossip-listen): a dead node is noticed only when its Lease expires")
		return func() {}, nil
	}
	gc := gossip.Config{
		NodeName: cfg.NodeName, BindAddr: cfg.GossipListen, AdvertiseAddr: cfg.GossipAdvertise, Join: cfg.GossipJoin,
		Client: client, Logger: log.With("component", "gossip"),
	}
	if gc.AdvertiseAddr == "" {
		gc.AdvertiseAddr = defaultAdvertise(cfg.GossipListen, nodeIP)
	}
	if cfg.NetNS != "" {
		gc.Dial = dial
	}
	if cfg.GossipKeyFile != "" {
		key, err := readGossipKey(cfg.GossipKeyFile)
		if err != nil {
			return nil, err
		}
		gc.SecretKey = key
	} else {
		log.Warn("gossip is not encrypted (no --gossip-key-file): anyone who can reach the gossip port can have nodes reported dead")
	}
	var g *gossip.Gossip
	err := nsthread.Run(cfg.NetNS, func() error {
		var err error
		g, err = gossip.New(gc)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.Run(ctx); err != nil {
			log.Error("gossip stopped", "err", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// defaultAdvertise is the address peers reach this agent's gossip at when
// --gossip-advertise is not given: the listen address when it names one,
// else the node IP at the listen port. Empty leaves the choice to gossip
// (a listen port of 0 is only known once bound).
func defaultAdvertise(listen string, nodeIP net.IP) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "0" || nodeIP == nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return ""
	}
	return net.JoinHostPort(nodeIP.String(), port)
}

// readGossipKey reads --gossip-key-file: the raw key, 16, 24 or 32
// bytes, the same on every agent.
func readGossipKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: --gossip-key-file: %w", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("agent: --gossip-key-file %s holds %d bytes; the key must be 16, 24 or 32 raw bytes (make one with `head -c 32 /dev/urandom > %s`)",
		path, len(key), path)
}
