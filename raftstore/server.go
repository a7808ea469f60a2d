package raftstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cairn/raftstore/transport"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb"
	raftwal "github.com/hashicorp/raft-wal"
	"google.golang.org/grpc"
)

// Server is one store replica: a Raft member, its FSM and the gRPC
// services that expose it.
type Server struct {
	cfg  Config
	log  *slog.Logger
	meta memberMeta

	fsm       *fsm
	raft      *raft.Raft
	trans     *raft.NetworkTransport
	mux       *transport.Mux
	peerGRPC  *grpc.Server
	storeGRPC *grpc.Server
	storeLn   net.Listener
	peers     *peerConns
	closers   []io.Closer

	metrics   *metrics
	leaderLog *leaderLog
	reads     *readIndexBatcher
	forwarder *forwarder
	hastener  *electionHastener
	lessor    *lessor
	ready     atomic.Bool   // this replica leads and has applied its leader barrier
	readyTerm atomic.Uint64 // the Raft term that barrier was applied in; 0 when not ready
	leaderSig *signal       // fires on every leader change
	leadMu    sync.Mutex
	lead      *Leadership // set once this replica's barrier applied; nil otherwise
	raftLog   hclog.Logger
	removed   chan struct{}
	raftDown  chan struct{} // closed once Raft has shut down

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// New validates cfg, opens or creates the data dir, starts Raft and serves
// the store and peer ports. Call Close to stop.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("member", cfg.Name), leaderSig: newSignal(), removed: make(chan struct{}), raftDown: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.raftLog = newRaftLogger(s.log)
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	peerLn, err := net.Listen("tcp", cfg.PeerListen)
	if err != nil {
		return nil, fmt.Errorf("raftstore: listening for peers on %s: %w", cfg.PeerListen, err)
	}
	s.closers = append(s.closers, peerLn)
	storeLn, err := net.Listen("tcp", cfg.StoreListen)
	if err != nil {
		return nil, fmt.Errorf("raftstore: listening for clients on %s: %w", cfg.StoreListen, err)
	}
	s.storeLn = storeLn
	s.closers = append(s.closers, storeLn)

	bootstrap, err := s.prepareDataDir()
	if err != nil {
		return nil, err
	}
	s.metrics = newMetrics(cfg.Metrics)
	s.fsm = newFSM(s.meta.ClusterID, s.log)
	s.fsm.onApply = s.metrics.observeApply

	s.mux = transport.NewMux(peerLn, cfg.TLS.peerServer(), s.log)
	sourceIP := localSourceIP(cfg.AdvertisePeer)
	advertise, err := net.ResolveTCPAddr("tcp", cfg.AdvertisePeer)
	if err != nil {
		return nil, fmt.Errorf("raftstore: --advertise-peer %q: %w", cfg.AdvertisePeer, err)
	}
	stream := transport.NewStreamLayer(s.mux.Raft(), advertise, cfg.TLS.peerClient(), sourceIP)
	s.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 4,
		Timeout: 2 * time.Second,
		Logger:  s.raftLog,
	})
	s.peers = newPeerConns(transport.GRPCDialer(cfg.TLS.peerClient(), sourceIP))
	s.closers = append(s.closers, s.peers)

	if err := s.startRaft(bootstrap); err != nil {
		return nil, err
	}
	s.reads = newReadIndexBatcher(s.leaderReadIndex)
	s.hastener = &electionHastener{s: s}
	s.forwarder = newForwarder(s, leaderDialer(cfg.TLS.peerClient(), sourceIP))
	s.lessor = newLessor(s)

	s.peerGRPC = grpc.NewServer(grpc.MaxRecvMsgSize(cfg.MaxRequestBytes + grpcOverheadBytes))
	s.registerPeerServices(s.peerGRPC)
	s.storeGRPC = s.newStoreGRPC()

	s.goRun("peer-mux", func() { _ = s.mux.Serve() })
	s.goRun("peer-grpc", func() { _ = s.peerGRPC.Serve(s.mux.GRPC()) })
	s.goRun("forwarded-writes", func() { s.serveForwarded(s.mux.Propose()) })
	s.goRun("store-grpc", func() {
		ln := transport.NewTLSListener(storeLn, grpcTLS(cfg.TLS.store()), s.log)
		_ = s.storeGRPC.Serve(ln)
	})
	s.goRun("leadership", s.watchLeadership)
	s.goRun("lessor", s.lessor.run)
	s.goRun("forwarder", s.forwarder.run)
	s.goRun("publish", s.publishAttrs)
	s.goRun("quota", s.watchQuota)
	s.goRun("membership", s.watchRemoval)
	if cfg.ScheduledSnapshotInterval > 0 {
		s.goRun("scheduled-snapshots", s.scheduledSnapshots)
	}
	s.log.Info("store replica started", "member_id", fmt.Sprintf("%016x", s.meta.MemberID),
		"cluster_id", fmt.Sprintf("%016x", s.meta.ClusterID), "peer", cfg.AdvertisePeer, "store", cfg.AdvertiseStore,
		"tls", cfg.TLS != nil, "log_store", cfg.LogStore)
	ok = true
	return s, nil
}

// goRun starts a named background loop that Close waits for.
func (s *Server) goRun(name string, fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
		s.log.Debug("loop stopped", "loop", name)
	}()
}

// prepareDataDir checks the data dir's identity, or creates one for a new
// member. It reports whether Raft must bootstrap a new cluster.
func (s *Server) prepareDataDir() (bootstrap bool, err error) {
	cfg := s.cfg
	meta, exists, err := readMeta(cfg.DataDir)
	if err != nil {
		return false, err
	}
	if err := s.checkForceNewCluster(exists); err != nil {
		return false, err
	}
	if exists {
		if meta.Name != cfg.Name {
			return false, fmt.Errorf("raftstore: data dir %s belongs to member %q, not %q: pass --name %s, or give this member its own --data-dir",
				cfg.DataDir, meta.Name, cfg.Name, meta.Name)
		}
		if meta.CAFingerprint != "" && cfg.CAFingerprint != "" && meta.CAFingerprint != cfg.CAFingerprint {
			return false, fmt.Errorf("raftstore: data dir %s was created under another cluster CA (%s, --pki-dir has %s): use this cluster's --pki-dir, or a new empty --data-dir",
				cfg.DataDir, short(meta.CAFingerprint), short(cfg.CAFingerprint))
		}
		if len(cfg.InitialCluster) > 0 && meta.Origin != originJoin {
			want := clusterIDFor(cfg.InitialCluster, cfg.InitialClusterToken)
			if want != meta.ClusterID {
				return false, fmt.Errorf("raftstore: data dir %s belongs to cluster %016x, but --initial-cluster/--initial-cluster-token describe cluster %016x: restart with the flags it was created with, or without --initial-cluster (only a bootstrap needs it); use a new empty --data-dir for a new cluster",
					cfg.DataDir, meta.ClusterID, want)
			}
		}
		s.meta = meta
		s.log.Info("restarting with existing data dir", "data_dir", cfg.DataDir)
		return false, nil
	}
	if dataDirInUse(cfg.DataDir) {
		return false, fmt.Errorf("raftstore: data dir %s is not empty but has no %s: it is not a Cairn data dir; use an empty --data-dir", cfg.DataDir, metaFile)
	}
	switch {
	case len(cfg.InitialCluster) > 0:
		var self *Peer
		for i := range cfg.InitialCluster {
			if cfg.InitialCluster[i].Name == cfg.Name {
				self = &cfg.InitialCluster[i]
			}
		}
		if self == nil {
			return false, fmt.Errorf("raftstore: --name %q is not in --initial-cluster", cfg.Name)
		}
		if self.Address != cfg.AdvertisePeer {
			return false, fmt.Errorf("raftstore: --initial-cluster gives %s the address %s, but it advertises %s: make them equal (see --advertise-peer)",
				cfg.Name, self.Address, cfg.AdvertisePeer)
		}
		cid := clusterIDFor(cfg.InitialCluster, cfg.InitialClusterToken)
		s.meta = memberMeta{Name: cfg.Name, ClusterID: cid, MemberID: memberIDFor(self.Address, cid), Origin: originBootstrap, CAFingerprint: cfg.CAFingerprint}
		bootstrap = true
	case cfg.Join != "":
		meta, err := s.joinCluster()
		if err != nil {
			return false, err
		}
		s.meta = meta
	default:
		return false, fmt.Errorf("raftstore: data dir %s is new: pass --initial-cluster to bootstrap a new cluster, or --join https://HOST:2379 to join a running one", cfg.DataDir)
	}
	if err := writeMeta(cfg.DataDir, s.meta); err != nil {
		return false, err
	}
	return bootstrap, nil
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

func (s *Server) startRaft(bootstrap bool) error {
	cfg := s.cfg
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(raftDir, 0o700); err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	var logs raft.LogStore
	var stable raft.StableStore
	switch cfg.LogStore {
	case "wal":
		w, err := openWAL(raftDir)
		if err != nil {
			return fmt.Errorf("raftstore: opening raft WAL: %w", err)
		}
		s.closers = append(s.closers, w)
		logs, stable = w, w
	default:
		b, err := raftboltdb.NewBoltStore(filepath.Join(raftDir, "raft.db"))
		if err != nil {
			return fmt.Errorf("raftstore: opening raft log %s: %w", filepath.Join(raftDir, "raft.db"), err)
		}
		s.closers = append(s.closers, b)
		logs, stable = b, b
	}
	ll, err := newLeaderLog(logs, s.logFailed)
	if err != nil {
		return fmt.Errorf("raftstore: opening raft log: %w", err)
	}
	s.closers = append(s.closers, ll) // closed before the store under it
	s.leaderLog = ll
	s.fsm.waitDurable = ll.waitDurable
	cached, err := raft.NewLogCache(4096, ll)
	if err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(raftDir, 2, s.raftLog)
	if err != nil {
		return fmt.Errorf("raftstore: opening snapshot store: %w", err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(memberIDString(s.meta.MemberID))
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.MaxAppendEntries = cfg.MaxAppendEntries
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = s.raftLog
	rc.NoLegacyTelemetry = true

	if bootstrap {
		has, err := raft.HasExistingState(cached, stable, snaps)
		if err != nil {
			return err
		}
		if !has {
			var servers []raft.Server
			for _, p := range cfg.InitialCluster {
				servers = append(servers, raft.Server{
					ID:       raft.ServerID(memberIDString(memberIDFor(p.Address, s.meta.ClusterID))),
					Address:  raft.ServerAddress(p.Address),
					Suffrage: raft.Voter,
				})
			}
			if err := raft.BootstrapCluster(rc, cached, stable, snaps, s.trans, raft.Configuration{Servers: servers}); err != nil {
				return fmt.Errorf("raftstore: bootstrapping cluster: %w", err)
			}
			s.log.Info("bootstrapped new cluster", "members", len(servers))
		}
	}
	if cfg.ForceNewCluster {
		if err := s.forceNewCluster(rc, cached, stable, snaps); err != nil {
			return err
		}
	}
	trans := &durableCommitTransport{NetworkTransport: s.trans, durable: ll.durableIndex}
	r, err := raft.NewRaft(rc, s.fsm, cached, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("raftstore: starting raft: %w", err)
	}
	s.raft = r
	ll.setLeaderCheck(func() bool { return r.State() == raft.Leader })
	return nil
}

// logFailed stops the process when the Raft log cannot be written, as
// etcd does: the entries already counted for a commit are not on this
// disk, and a restart recovers from what is.
func (s *Server) logFailed(err error) {
	s.log.Error("the Raft log cannot be written; stopping", "err", err)
	panic(err)
}

// memberIDString is the Raft server ID of a member: its ID in hex.
func memberIDString(id uint64) string { return fmt.Sprintf("%016x", id) }

func parseMemberID(s raft.ServerID) uint64 {
	id, _ := strconv.ParseUint(string(s), 16, 64)
	return id
}

// localSourceIP returns the IP outgoing peer connections bind to: the
// advertised one, so that peers (and network fault tests) see a stable
// source address.
func localSourceIP(advertise string) net.IP {
	host, _, err := net.SplitHostPort(advertise)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return nil // not an address of this host (e.g. behind NAT)
	}
	ln.Close()
	return ip
}

// MemberID returns this member's ID.
func (s *Server) MemberID() uint64 { return s.meta.MemberID }

// Members lists the cluster's members as the etcd Cluster API does: the
// Raft configuration, with the names and client URLs members publish.
func (s *Server) Members() ([]*pb.Member, error) { return s.members() }

// HasMember reports whether dataDir already belongs to a member, which
// then restarts from it: --join and --initial-cluster no longer matter.
func HasMember(dataDir string) (bool, error) {
	_, ok, err := readMeta(dataDir)
	return ok, err
}

// ClusterID returns the cluster's ID.
func (s *Server) ClusterID() uint64 { return s.meta.ClusterID }

// IsLeader reports whether this replica leads and is ready to serve
// leader-only work.
func (s *Server) IsLeader() bool { return s.ready.Load() }

// StoreAddr returns the address the store API listens on.
func (s *Server) StoreAddr() string { return s.storeLn.Addr().String() }

// Removed is closed when this member has been removed from the cluster;
// the process should then stop, as etcd's removed members do.
func (s *Server) Removed() <-chan struct{} { return s.removed }

// watchRemoval notices this member's removal from the Raft configuration.
func (s *Server) watchRemoval() {
	self := raft.ServerID(memberIDString(s.meta.MemberID))
	// A bootstrapped or restored member starts in the configuration; a
	// joining one counts once it has seen itself in it.
	seen := s.meta.Origin != originJoin
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		f := s.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		in := false
		for _, srv := range f.Configuration().Servers {
			in = in || srv.ID == self
		}
		if in {
			seen = true
			// A removed follower may never receive the entry that removes
			// it; when it hears from no leader, it asks its peers.
			if addr, _ := s.leader(); addr != "" || !s.removedPerPeers(f.Configuration()) {
				continue
			}
		}
		if seen && len(f.Configuration().Servers) > 0 {
			s.log.Error("this member was removed from the cluster; stopping. To rejoin, wipe its --data-dir and start it with --join")
			close(s.removed)
			return
		}
	}
}

// removedPerPeers asks the other members, over the peer port, whether
// this member is still in the cluster. Only a member that knows a leader is
// believed.
func (s *Server) removedPerPeers(conf raft.Configuration) bool {
	for _, srv := range conf.Servers {
		if parseMemberID(srv.ID) == s.meta.MemberID {
			continue
		}
		conn, err := s.peers.get(string(srv.Address))
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Second)
		st, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
		if err != nil || st.Leader == 0 {
			cancel()
			continue
		}
		list, err := pb.NewClusterClient(conn).MemberList(ctx, &pb.MemberListRequest{})
		cancel()
		if err != nil {
			continue
		}
		for _, m := range list.Members {
			if m.ID == s.meta.MemberID {
				return false
			}
		}
		return true
	}
	return false
}

// Close stops serving and shuts Raft down. It is safe to call twice.
func (s *Server) Close() error {
	s.stop.Do(func() {
		s.handOffLeadership()
		s.ready.Store(false)
		s.cancel()
		// Refuse peers at once: a follower whose forwarded-write
		// connection just closed checks the port to tell a stopped leader
		// from a broken connection (hasten.go).
		if s.mux != nil {
			s.mux.Close()
		}
		if s.storeGRPC != nil {
			stopGRPC(s.storeGRPC)
		}
		if s.peerGRPC != nil {
			stopGRPC(s.peerGRPC)
		}
		if s.raft != nil {
			if err := s.raft.Shutdown().Error(); err != nil {
				s.log.Warn("raft shutdown", "err", err)
			}
		}
		close(s.raftDown)
		if s.trans != nil {
			s.trans.Close()
		}
		s.wg.Wait()
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i].Close()
		}
	})
	return nil
}

// handOffLeadership asks the most up-to-date follower to take over before
// a leader stops, as etcd does: the cluster has a new leader within a
// round trip instead of after the followers' heartbeat timeout. Raft gives
// up on a follower that does not take over within the election timeout.
func (s *Server) handOffLeadership() {
	if s.raft == nil || s.raft.State() != raft.Leader || !s.hasOtherVoter() {
		return
	}
	start := time.Now()
	f := s.raft.LeadershipTransfer()
	answered := make(chan error, 1)
	go func() { answered <- f.Error() }()
	select {
	case err := <-answered:
		if err != nil {
			s.log.Warn("stopping without handing leadership over", "err", err)
			return
		}
		to, _ := s.leader()
		s.log.Info("handed leadership over before stopping", "to", string(to), "took", time.Since(start).Round(time.Millisecond))
	case <-time.After(2 * s.cfg.ElectionTimeout):
		s.log.Warn("stopping without handing leadership over: no follower took it in time")
	}
}

// hasOtherVoter reports whether a voter besides this replica exists.
func (s *Server) hasOtherVoter() bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	self := raft.ServerID(memberIDString(s.meta.MemberID))
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter && srv.ID != self {
			return true
		}
	}
	return false
}

// stopGRPC stops gracefully, but never waits long for streams (watches)
// that would otherwise hold shutdown forever.
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		g.Stop()
	}
}

var errClosed = errors.New("raftstore: closed")

// grpcTLS offers ALPN h2: TLS ends in our listener, before gRPC, and gRPC
// clients insist on negotiating it.
func grpcTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	c = c.Clone()
	c.NextProtos = []string{"h2"}
	return c
}

func openWAL(raftDir string) (*raftwal.WAL, error) {
	dir := filepath.Join(raftDir, "wal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return raftwal.Open(dir)
}

// leader is the leader this replica knows, empty if none. A candidate has
// none, as in etcd, though hashicorp/raft may still name one: a candidate
// started by a leadership transfer records the sender of an AppendEntries
// as leader without becoming its follower, and keeps that through every
// failed election after, so a replica left without quorum would report
// the old leader for good.
func (s *Server) leader() (raft.ServerAddress, raft.ServerID) {
	if s.raft.State() == raft.Candidate {
		return "", ""
	}
	return s.raft.LeaderWithID()
}
