package gossip

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// leaveTimeout bounds each step of a graceful leave.
const leaveTimeout = time.Second

// Gossip is one agent's member of the gossip cluster and the reporter of
// what it sees.
type Gossip struct {
	cfg       Config
	log       *slog.Logger
	ml        *memberlist.Memberlist
	addr      string // advertised host:port
	reportKey string

	// kick wakes the sync loop; it holds at most one pending wake-up.
	kick chan struct{}
	// joining is set while a join runs in the background.
	joining atomic.Bool
	// crashed is set by tests that stop the member without leaving.
	crashed atomic.Bool
	// leaving is this member's meta: it is on its way out.
	leaving atomic.Bool

	mu sync.Mutex
	// view is what memberlist told us of each peer, kept after memberlist
	// forgets dead members.
	view map[string]*peer
	// dirty lists the Nodes to look at; true if a missing report may be
	// added (member events and the periodic pass, not Node updates, which
	// would race a restarted node's own clean-up).
	dirty map[string]bool
	// lastPatch is the last report write per Node, to skip repeating it
	// while the informer catches up.
	lastPatch map[string]patchMemo
	// pendingJoin lists addresses waiting for the running join.
	pendingJoin []string
	// joinedAt is when the first join attempt ended (or when there was
	// nobody to join).
	joinedAt time.Time
	// selfClean is set once the reports on our own Node were removed.
	selfClean bool
}

type patchMemo struct {
	report bool // the write added (true) or removed our report
	at     time.Time
}

// New binds the gossip sockets and starts the member; Run joins the
// cluster and reports. A Gossip that is never Run must be Closed.
func New(cfg Config) (*Gossip, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	g := &Gossip{
		cfg: cfg, log: cfg.Logger, reportKey: ReportKey(cfg.NodeName),
		kick: make(chan struct{}, 1), view: map[string]*peer{}, dirty: map[string]bool{},
		lastPatch: map[string]patchMemo{},
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.NodeName
	host, port, _ := splitHostPort(cfg.BindAddr)
	if host == "" {
		host = "0.0.0.0"
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	switch {
	case cfg.AdvertiseAddr != "":
		mc.AdvertiseAddr, mc.AdvertisePort, _ = splitHostPort(cfg.AdvertiseAddr)
	case !net.ParseIP(host).IsUnspecified():
		mc.AdvertiseAddr = host
	}
	cfg.Timings.Apply(mc)
	mc.SecretKey = cfg.SecretKey
	mc.Events = events{g}
	mc.Delegate = meta{g}
	mc.Logger = log.New(logWriter{g.log}, "", 0)
	if cfg.Dial != nil {
		tr, err := newDialTransport(host, port, mc.Logger, cfg.Dial)
		if err != nil {
			return nil, fmt.Errorf("gossip: listening on %s: %w", cfg.BindAddr, err)
		}
		if port == 0 {
			mc.BindPort = tr.GetAutoBindPort()
			if cfg.AdvertiseAddr == "" {
				mc.AdvertisePort = mc.BindPort
			}
		}
		mc.Transport = tr
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("gossip: listening on %s: %w", cfg.BindAddr, err)
	}
	g.ml = ml
	local := ml.LocalNode()
	g.addr = net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))
	return g, nil
}

// Addr is the address peers reach this member at, host:port.
func (g *Gossip) Addr() string { return g.addr }

// Members returns the names of the members this one sees alive, itself
// included.
func (g *Gossip) Members() []string {
	var out []string
	for _, n := range g.ml.Members() {
		out = append(out, n.Name)
	}
	return out
}

// LivePeers is how many other members this one sees alive.
func (g *Gossip) LivePeers() int { return g.ml.NumMembers() - 1 }

// Close stops the member at once without leaving, as kill -9 would; a
// running Run then returns without leaving too (memberlist cannot leave
// once shut down). Run leaves and closes by itself when its context ends.
func (g *Gossip) Close() error {
	g.crashed.Store(true)
	return g.ml.Shutdown()
}

// Run joins the cluster, publishes this member's address on its Node,
// clears old reports about it and reports peers' deaths until ctx ends;
// then it leaves the cluster, so peers know the agent stopped rather than
// died, and closes the member.
func (g *Gossip) Run(ctx context.Context) error {
	defer g.leave()
	if len(g.cfg.Join) > 0 {
		g.join(g.cfg.Join)
	}

	factory := informers.NewSharedInformerFactory(g.cfg.Client, 0)
	nodeInformer := factory.Core().V1().Nodes()
	nodes := nodeInformer.Lister()
	_, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.nodeChanged(obj) },
		UpdateFunc: func(_, obj any) { g.nodeChanged(obj) },
		DeleteFunc: func(obj any) { g.nodeChanged(obj) },
	})
	if err != nil {
		return fmt.Errorf("gossip: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced) {
		return nil
	}
	g.log.Info("gossip started", "addr", g.addr, "members", g.ml.NumMembers())

	ticker := time.NewTicker(g.cfg.ReconcileInterval)
	defer ticker.Stop()
	retry := time.NewTimer(0)
	defer retry.Stop()
	g.reconcile(nodes)
	for {
		if g.sync(ctx, nodes) {
			retry.Reset(g.retryDelay())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-g.kick:
		case <-retry.C:
		case <-ticker.C:
			g.reconcile(nodes)
		}
	}
}

// retryDelay is how long failed writes wait: about a probe round, so
// that a report never waits much longer than detection took.
func (g *Gossip) retryDelay() time.Duration {
	return max(g.cfg.Timings.ProbeInterval*5, 500*time.Millisecond)
}

// leave tells the cluster this member is going (first in its meta, so
// that peers that miss the leave message still do not report it dead),
// leaves and closes the member.
func (g *Gossip) leave() {
	if g.crashed.Load() {
		return
	}
	g.leaving.Store(true)
	if err := g.ml.UpdateNode(leaveTimeout); err != nil {
		g.log.Debug("announcing the leave", "err", err)
	}
	if err := g.ml.Leave(leaveTimeout); err != nil {
		g.log.Warn("leaving the gossip cluster", "err", err)
	}
	if err := g.ml.Shutdown(); err != nil {
		g.log.Warn("stopping gossip", "err", err)
	}
}

// crash stops the member at once without leaving, as kill -9 would.
func (g *Gossip) crash() {
	g.crashed.Store(true)
	g.ml.Shutdown()
}

// wake asks the sync loop for a pass.
func (g *Gossip) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// markDirty queues a Node for the sync loop.
func (g *Gossip) markDirty(name string, mayAdd bool) {
	g.mu.Lock()
	g.dirty[name] = g.dirty[name] || mayAdd
	g.mu.Unlock()
	g.wake()
}

// join joins addrs in the background. While a join runs, later ones
// wait for it, so that dead addresses, which cost a TCP timeout each,
// never pile up goroutines.
func (g *Gossip) join(addrs []string) {
	g.mu.Lock()
	g.pendingJoin = append(g.pendingJoin, addrs...)
	g.mu.Unlock()
	if !g.joining.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer g.joining.Store(false)
		for {
			g.mu.Lock()
			addrs := g.pendingJoin
			g.pendingJoin = nil
			g.mu.Unlock()
			if len(addrs) == 0 {
				return
			}
			n, err := g.ml.Join(addrs)
			switch {
			case n > 0:
				g.log.Info("joined the gossip cluster", "via", n, "tried", len(addrs), "members", g.ml.NumMembers())
			case err != nil && !errors.Is(err, net.ErrClosed):
				g.log.Debug("no gossip peer reachable yet", "tried", addrs, "err", err)
			}
			g.joined()
		}
	}()
}

// joined records the end of the first join attempt.
func (g *Gossip) joined() {
	g.mu.Lock()
	if g.joinedAt.IsZero() {
		g.joinedAt = g.cfg.Clock.Now()
	}
	g.mu.Unlock()
	g.wake()
}
