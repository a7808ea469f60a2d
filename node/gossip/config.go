package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// DefaultPort is the agents' gossip port (TCP and UDP).
const DefaultPort = 7946

// DefaultReconcileInterval is how often every Node is looked at again, and
// peers missing from the cluster are joined.
const DefaultReconcileInterval = 10 * time.Second

// Timings tune memberlist's failure detector. Zero fields take
// DefaultTimings' values.
type Timings struct {
	// ProbeInterval is how often a member probes one other member.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for its ack before
	// asking IndirectChecks other members to probe too; the probe as a
	// whole fails at the end of ProbeInterval.
	ProbeTimeout time.Duration
	// SuspicionMult times ProbeInterval (times log10 of the cluster size
	// from 10 members) is how long a suspect has to refute the suspicion
	// once SuspicionMult-2 other members confirmed it.
	SuspicionMult int
	// SuspicionMaxTimeoutMult times that is how long it has without
	// confirmations.
	SuspicionMaxTimeoutMult int
	// GossipInterval and GossipNodes say how often, and to how many
	// members, news (suspect, dead, alive) is sent.
	GossipInterval time.Duration
	GossipNodes    int
	// IndirectChecks is how many members probe a member that missed a
	// direct probe.
	IndirectChecks int
	// RetransmitMult times log10(cluster size+1) is how many times a piece
	// of news is gossiped.
	RetransmitMult int
	// PushPullInterval is how often a member syncs its whole state with a
	// random other member, over TCP.
	PushPullInterval time.Duration
	// TCPTimeout bounds TCP exchanges: joins, push/pull, fallback probes.
	TCPTimeout time.Duration
	// DeadNodeReclaimTime is how long after its death a member may come
	// back under the same name at another address.
	DeadNodeReclaimTime time.Duration
}

// DefaultTimings are tuned for agents on one LAN: peers declare a killed
// agent dead in 1 to 1.6s, and 10% packet loss between nodes does not get
// a live agent declared dead by two peers (measured with lossbench: 5
// members, 10 minutes, 30 kills).
//
// The arithmetic, below ten members: every member probes one peer per
// 200ms, so some peer probes a dead member within about 200ms. The probe
// fails when neither the direct ping (100ms), nor three indirect ones, nor
// a TCP ping answer by the end of the interval. The suspicion then runs
// SuspicionMult×ProbeInterval = 0.8s once two other members confirm it,
// up to 3×0.8s = 2.4s without confirmation. A live member that is wrongly
// suspected refutes through gossip sent every 100ms to 3 members, so even
// with 10% loss it has many chances within 0.8s.
func DefaultTimings() Timings {
	return Timings{
		ProbeInterval:           200 * time.Millisecond,
		ProbeTimeout:            100 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 3,
		GossipInterval:          100 * time.Millisecond,
		GossipNodes:             3,
		IndirectChecks:          3,
		RetransmitMult:          4,
		PushPullInterval:        15 * time.Second,
		TCPTimeout:              2 * time.Second,
		DeadNodeReclaimTime:     time.Second,
	}
}

// withDefaults fills zero fields from DefaultTimings.
func (t Timings) withDefaults() Timings {
	d := DefaultTimings()
	dur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	num := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	dur(&t.ProbeInterval, d.ProbeInterval)
	dur(&t.ProbeTimeout, d.ProbeTimeout)
	num(&t.SuspicionMult, d.SuspicionMult)
	num(&t.SuspicionMaxTimeoutMult, d.SuspicionMaxTimeoutMult)
	dur(&t.GossipInterval, d.GossipInterval)
	num(&t.GossipNodes, d.GossipNodes)
	num(&t.IndirectChecks, d.IndirectChecks)
	num(&t.RetransmitMult, d.RetransmitMult)
	dur(&t.PushPullInterval, d.PushPullInterval)
	dur(&t.TCPTimeout, d.TCPTimeout)
	dur(&t.DeadNodeReclaimTime, d.DeadNodeReclaimTime)
	return t
}

// Apply sets c's failure detector settings from t (zero fields taking
// their defaults), so that harnesses run memberlist exactly as agents do.
func (t Timings) Apply(c *memberlist.Config) {
	t = t.withDefaults()
	c.ProbeInterval = t.ProbeInterval
	c.ProbeTimeout = t.ProbeTimeout
	c.SuspicionMult = t.SuspicionMult
	c.SuspicionMaxTimeoutMult = t.SuspicionMaxTimeoutMult
	c.GossipInterval = t.GossipInterval
	c.GossipNodes = t.GossipNodes
	c.IndirectChecks = t.IndirectChecks
	c.RetransmitMult = t.RetransmitMult
	c.PushPullInterval = t.PushPullInterval
	c.TCPTimeout = t.TCPTimeout
	c.DeadNodeReclaimTime = t.DeadNodeReclaimTime
	// Dead members are gossiped about, and kept in push/pull state, for
	// as long as a restarted one may take to come back.
	c.GossipToTheDeadTime = 30 * time.Second
}

func (t Timings) validate() error {
	if t.ProbeTimeout >= t.ProbeInterval {
		return fmt.Errorf("gossip: probe timeout %v must be shorter than the probe interval %v, which also holds the indirect probes", t.ProbeTimeout, t.ProbeInterval)
	}
	if t.SuspicionMult < 2 {
		return fmt.Errorf("gossip: suspicion multiplier %d must be at least 2", t.SuspicionMult)
	}
	return nil
}

// Config configures an agent's gossip.
type Config struct {
	// NodeName is this agent's Node; it names the member and its reports.
	NodeName string
	// BindAddr is where to listen, host:port (--gossip-listen); ":7946"
	// when empty. Port 0 picks a free port.
	BindAddr string
	// AdvertiseAddr is the host:port peers reach this agent at, written
	// on its Node; BindAddr when that names an address, else memberlist's
	// choice of a private address (pass the node IP).
	AdvertiseAddr string
	// Join lists host:port of members to join at start (--gossip-join);
	// optional, since the Node objects' addresses are tried too.
	Join []string
	// Dial, when set, makes memberlist's TCP connections (joins, state
	// syncs, fallback probes); for an agent whose node has a network
	// namespace of its own, call New inside it (so the sockets bind there)
	// and dial from it too.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// SecretKey, when set (16, 24 or 32 bytes, the same on every agent),
	// encrypts and authenticates gossip: without it anyone on the network
	// can have a node reported dead.
	SecretKey []byte
	// Client writes the reports; it needs get, list, watch and patch on
	// nodes.
	Client kubernetes.Interface
	Logger *slog.Logger
	// Clock stamps reports (the real clock when nil).
	Clock clock.Clock
	// Timings tune failure detection (DefaultTimings when zero).
	Timings Timings
	// ReconcileInterval is DefaultReconcileInterval when zero.
	ReconcileInterval time.Duration
}

// check validates c and fills in its defaults.
func (c *Config) check() error {
	if c.NodeName == "" {
		return errors.New("gossip: NodeName is required")
	}
	if c.Client == nil {
		return errors.New("gossip: a Client is required to report dead nodes")
	}
	if c.BindAddr == "" {
		c.BindAddr = net.JoinHostPort("", strconv.Itoa(DefaultPort))
	}
	if host, _, err := splitHostPort(c.BindAddr); err != nil {
		return fmt.Errorf("gossip: --gossip-listen %q: %w", c.BindAddr, err)
	} else if host != "" && net.ParseIP(host) == nil {
		return fmt.Errorf("gossip: --gossip-listen %q: listen on an IP address, not a name", c.BindAddr)
	}
	if c.AdvertiseAddr != "" {
		if host, _, err := splitHostPort(c.AdvertiseAddr); err != nil || net.ParseIP(host) == nil {
			return fmt.Errorf("gossip: advertise address %q is not an IP address and port", c.AdvertiseAddr)
		}
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return fmt.Errorf("gossip: --gossip-join %q is not host:port: %w", j, err)
		}
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		return fmt.Errorf("gossip: the gossip key has %d bytes; it must have 16, 24 or 32", len(c.SecretKey))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.ReconcileInterval <= 0 {
		c.ReconcileInterval = DefaultReconcileInterval
	}
	c.Timings = c.Timings.withDefaults()
	return c.Timings.validate()
}

// splitHostPort splits host:port with a numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}
