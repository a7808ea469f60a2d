package raftstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config is everything a store replica needs to start.
type Config struct {
	// Name is this member's human name; it must match the data dir.
	Name    string
	DataDir string

	// PeerListen carries Raft and internal peer RPCs (mutual TLS);
	// StoreListen serves the etcd v3 gRPC API.
	PeerListen     string
	StoreListen    string
	AdvertisePeer  string // defaults to PeerListen
	AdvertiseStore string // defaults to StoreListen

	// InitialCluster bootstraps a new cluster; Join (a store URL of a
	// running member) adds this member to one instead.
	InitialCluster      []Peer
	InitialClusterToken string
	Join                string
	Learner             bool
	// ForceNewCluster restarts a surviving member alone when the others
	// are lost for good: it keeps its data and drops every other member
	// (recover.go).
	ForceNewCluster bool

	// TLS is nil in insecure mode.
	TLS *TLSConfig
	// CAFingerprint identifies the cluster CA; a data dir created under
	// another CA is refused.
	CAFingerprint string

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	RequestTimeout     time.Duration
	MaxAppendEntries   int
	// SnapshotThreshold is how many log entries trigger a Raft snapshot and
	// log truncation.
	SnapshotThreshold uint64
	// TrailingLogs is how many entries a Raft snapshot leaves in the log,
	// so that a briefly lagging follower catches up without a snapshot.
	TrailingLogs uint64
	LogStore     string // "boltdb" (default) or "wal"

	QuotaBytes      int64
	MaxRequestBytes int

	// ScheduledSnapshotInterval, when non-zero, writes a snapshot file into
	// DATA/snapshots that often, keeping ScheduledSnapshotRetention files.
	ScheduledSnapshotInterval  time.Duration
	ScheduledSnapshotRetention int

	// WatchProgressNotifyInterval is how often watches that asked for
	// progress notifications get one.
	WatchProgressNotifyInterval time.Duration

	// Metrics receives the store's Prometheus collectors; nil makes a
	// private registry.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// TLSConfig holds the ready TLS configurations of a secure replica.
type TLSConfig struct {
	Store      *tls.Config // serves the store API; requires client certs from the CA
	PeerServer *tls.Config // serves the peer port; requires peer certs
	PeerClient *tls.Config // dials other members' peer ports
	Client     *tls.Config // dials a member's store API (used by --join)
}

// Defaults tuned for a LAN: a dead leader is noticed within a few hundred
// milliseconds.
const (
	DefaultHeartbeatTimeout   = 400 * time.Millisecond
	DefaultElectionTimeout    = 400 * time.Millisecond
	DefaultLeaderLeaseTimeout = 200 * time.Millisecond
	DefaultCommitTimeout      = 5 * time.Millisecond
	DefaultRequestTimeout     = 7 * time.Second
	DefaultQuotaBytes         = 2 << 30
	DefaultMaxRequestBytes    = 1536 * 1024
	DefaultSnapshotThreshold  = 20000
	DefaultTrailingLogs       = 10240
	DefaultMaxAppendEntries   = 256
)

func (c *Config) setDefaults() error {
	if c.Name == "" {
		return errors.New("raftstore: --name is required")
	}
	if c.DataDir == "" {
		return errors.New("raftstore: --data-dir is required")
	}
	if c.PeerListen == "" || c.StoreListen == "" {
		return errors.New("raftstore: --peer-listen and --store-listen are required")
	}
	if c.AdvertisePeer == "" {
		c.AdvertisePeer = c.PeerListen
	}
	if c.AdvertiseStore == "" {
		c.AdvertiseStore = c.StoreListen
	}
	for flag, addr := range map[string]string{"--advertise-peer": c.AdvertisePeer, "--advertise-store": c.AdvertiseStore} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("raftstore: %s %q: %v", flag, addr, err)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return fmt.Errorf("raftstore: %s %q is a wildcard address other members cannot reach: set %s to this host's address", flag, addr, flag)
		}
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = DefaultLeaderLeaseTimeout
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("raftstore: leader lease timeout %v must not exceed heartbeat timeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxAppendEntries == 0 {
		c.MaxAppendEntries = DefaultMaxAppendEntries
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.QuotaBytes == 0 {
		c.QuotaBytes = DefaultQuotaBytes
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.ScheduledSnapshotRetention == 0 {
		c.ScheduledSnapshotRetention = 5
	}
	if c.WatchProgressNotifyInterval == 0 {
		c.WatchProgressNotifyInterval = 10 * time.Minute
	}
	switch c.LogStore {
	case "":
		c.LogStore = "boltdb"
	case "boltdb", "wal":
	default:
		return fmt.Errorf("raftstore: --raft-log-store %q: want boltdb or wal", c.LogStore)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if len(c.InitialCluster) > 0 && c.Join != "" {
		return errors.New("raftstore: pass either --initial-cluster (new cluster) or --join (existing cluster), not both")
	}
	return nil
}

// The accessors return nil in insecure mode.
func (t *TLSConfig) store() *tls.Config {
	if t == nil {
		return nil
	}
	return t.Store
}

func (t *TLSConfig) peerServer() *tls.Config {
	if t == nil {
		return nil
	}
	return t.PeerServer
}

func (t *TLSConfig) peerClient() *tls.Config {
	if t == nil {
		return nil
	}
	return t.PeerClient
}

func (t *TLSConfig) client() *tls.Config {
	if t == nil {
		return nil
	}
	return t.Client
}
