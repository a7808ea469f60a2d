package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"cairn/apiserver"
	"cairn/internal/pki"
	"cairn/raftstore"

	gometrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

// knownComponents are the parts of a server that --disable can turn off.
var knownComponents = []string{"apiserver", "scheduler", "controllers"}

func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a control plane replica: the store, the API server and, on the elected replica, the scheduler and controllers",
		Long: `Run a Cairn control plane replica. Three or five replicas form a Raft cluster
that serves the etcd v3 API on --store-listen. Each replica serves the
Kubernetes API; the one elected runs the scheduler and the controllers
(--disable turns parts off).

Bootstrap a new cluster (run once per member, same --initial-cluster):
  cairn server --name s1 --data-dir D1 --pki-dir PKI \
    --peer-listen 127.0.0.1:2380 --store-listen 127.0.0.1:2379 \
    --initial-cluster s1=127.0.0.1:2380,s2=127.0.0.1:12380,s3=127.0.0.1:22380

Join a running cluster with a join token (DATA/token of any server, or
` + "`cairn token create --server`" + `) through a server's API; the CA is fetched into
--pki-dir (default DATA/pki), checked against the token:
  cairn server --name s4 --data-dir D4 --join https://10.0.0.1:6443 --token K10...

Or through a member's store URL, with the cluster's PKI dir (no --token):
  cairn server --name s4 --data-dir D4 --pki-dir PKI --join https://127.0.0.1:2379 ...

Restart with the same --data-dir to rejoin with all data. When a quorum is
lost for good, restart a survivor with --force-new-cluster.`,
		Args: cobra.NoArgs,
		RunE: runServer,
	}
	f := cmd.Flags()
	f.String("name", "", "member name (required); must match the data dir on restart")
	f.String("data-dir", "", "data directory (required)")
	f.String("pki-dir", "", "directory with the cluster CA made by \"cairn pki init\" (required unless --insecure)")
	f.Bool("insecure", false, "turn TLS off on every port (development only)")
	f.String("peer-listen", "127.0.0.1:2380", "address for Raft and peer traffic (mutual TLS)")
	f.String("store-listen", "127.0.0.1:2379", "address for the etcd v3 gRPC API")
	f.String("advertise-peer", "", "peer address other members use (default --peer-listen)")
	f.String("advertise-store", "", "store address clients use (default --store-listen)")
	f.String("initial-cluster", "", "bootstrap a new cluster: name=host:port of every member's peer address, comma separated")
	f.String("initial-cluster-token", "cairn", "token that makes the cluster ID unique among clusters with the same members")
	f.String("join", "", "join a running cluster: with --token, a server's API URL (https://10.0.0.1:6443); without, a member's store URL (https://10.0.0.1:2379)")
	f.String("token", "", "join token (K10...: a server's DATA/token, or made by \"cairn token create --server\") for --join through an API URL")
	f.Bool("force-new-cluster", false, "restart this surviving member alone, keeping its data and dropping every other member (quorum lost for good); remove it for later restarts")
	f.Bool("learner", false, "with --join: join as a non-voting learner (promote it later with \"cairn etcdctl member promote\")")
	f.StringSlice("disable", nil, "components not to run: "+strings.Join(knownComponents, ","))
	f.String("metrics-listen", "", "address for Prometheus /metrics and /health (plain HTTP); empty: off")
	f.Bool("enable-pprof", false, "also serve Go profiles under /debug/pprof/ on --metrics-listen")
	f.Duration("heartbeat-timeout", raftstore.DefaultHeartbeatTimeout, "time without leader contact before a follower starts an election")
	f.Duration("election-timeout", raftstore.DefaultElectionTimeout, "time a candidate waits for votes")
	f.Duration("leader-lease-timeout", raftstore.DefaultLeaderLeaseTimeout, "time a leader keeps leading without quorum contact (at most --heartbeat-timeout)")
	f.Duration("commit-timeout", raftstore.DefaultCommitTimeout, "how soon followers learn a commit when no new entries flow")
	f.Duration("request-timeout", raftstore.DefaultRequestTimeout, "how long a request waits for a leader and a commit")
	f.Int("max-append-entries", raftstore.DefaultMaxAppendEntries, "largest batch of log entries in one Raft append")
	f.Uint64("raft-snapshot-threshold", raftstore.DefaultSnapshotThreshold, "log entries between Raft snapshots (log compaction)")
	f.String("raft-log-store", "boltdb", "Raft log store: boltdb (raft-boltdb) or wal (raft-wal, faster fsync batching)")
	f.Int64("quota-bytes", raftstore.DefaultQuotaBytes, "store size that raises the NOSPACE alarm and refuses writes")
	f.Int("max-request-bytes", raftstore.DefaultMaxRequestBytes, "largest client request accepted")
	f.Duration("snapshot-interval", 0, "write a snapshot file into DATA/snapshots this often (0: off)")
	f.Int("snapshot-retention", 5, "scheduled snapshot files to keep")
	f.Duration("watch-progress-notify-interval", 10*time.Minute, "interval of progress notifications to watches that ask for them")
	addAPIFlags(f)
	addControllerFlags(f)
	addSchedulerFlags(f)
	cmd.AddCommand(newServerRemoveCmd())
	return cmd
}

func runServer(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	log, err := newLogger(cmd)
	if err != nil {
		return err
	}
	str := func(n string) string { v, _ := f.GetString(n); return v }
	dur := func(n string) time.Duration { v, _ := f.GetDuration(n); return v }
	insecure, _ := f.GetBool("insecure")
	learner, _ := f.GetBool("learner")
	disabled, _ := f.GetStringSlice("disable")
	for _, d := range disabled {
		if !contains(knownComponents, d) {
			return fmt.Errorf("--disable %q: unknown component (known: %s)", d, strings.Join(knownComponents, ", "))
		}
	}
	forceNew, _ := f.GetBool("force-new-cluster")
	if insecure && str("token") != "" {
		return errors.New("--token fetches the cluster CA and needs TLS: drop --insecure")
	}
	cfg := raftstore.Config{
		Name:                        str("name"),
		DataDir:                     str("data-dir"),
		PeerListen:                  str("peer-listen"),
		StoreListen:                 str("store-listen"),
		AdvertisePeer:               str("advertise-peer"),
		AdvertiseStore:              str("advertise-store"),
		InitialClusterToken:         str("initial-cluster-token"),
		Join:                        str("join"),
		Learner:                     learner,
		ForceNewCluster:             forceNew,
		HeartbeatTimeout:            dur("heartbeat-timeout"),
		ElectionTimeout:             dur("election-timeout"),
		LeaderLeaseTimeout:          dur("leader-lease-timeout"),
		CommitTimeout:               dur("commit-timeout"),
		RequestTimeout:              dur("request-timeout"),
		LogStore:                    str("raft-log-store"),
		ScheduledSnapshotInterval:   dur("snapshot-interval"),
		WatchProgressNotifyInterval: dur("watch-progress-notify-interval"),
		Logger:                      log,
	}
	cfg.MaxAppendEntries, _ = f.GetInt("max-append-entries")
	cfg.SnapshotThreshold, _ = f.GetUint64("raft-snapshot-threshold")
	cfg.QuotaBytes, _ = f.GetInt64("quota-bytes")
	cfg.MaxRequestBytes, _ = f.GetInt("max-request-bytes")
	cfg.ScheduledSnapshotRetention, _ = f.GetInt("snapshot-retention")
	if ic := str("initial-cluster"); ic != "" {
		if cfg.InitialCluster, err = raftstore.ParseInitialCluster(ic); err != nil {
			return err
		}
	}
	if cfg.Name == "" {
		return errors.New("--name is required")
	}
	if cfg.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	var ca *pki.CA
	if !insecure {
		dir := str("pki-dir")
		// Joining with a token fetches the CA first (serverjoin.go).
		if token := str("token"); token != "" {
			if dir == "" {
				dir = defaultJoinPKIDir(cfg.DataDir)
			}
			if cfg.Join, err = joinWithToken(cfg, token, dir, log); err != nil {
				return err
			}
		}
		if dir == "" {
			return errors.New("--pki-dir is required (create one with `cairn pki init --dir DIR`), or pass --insecure for development")
		}
		if ca, err = pki.LoadCA(dir); err != nil {
			return err
		}
		if cfg.TLS, err = serverTLS(ca, cfg); err != nil {
			return err
		}
		cfg.CAFingerprint = ca.Fingerprint()
	} else {
		log.Warn("TLS is off (--insecure): anyone who reaches the ports can read and write the store")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Metrics = reg
	if err := exportRaftMetrics(reg); err != nil {
		return err
	}

	srv, err := raftstore.New(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !contains(disabled, "apiserver") {
		if ca == nil {
			log.Warn("not serving the Kubernetes API: it needs TLS and client authentication; pass --pki-dir instead of --insecure")
		} else {
			backend, closeBackend := apiserver.LocalBackend(srv)
			defer closeBackend()
			apiURL, err := startAPIServer(ctx, f, apiOptions{name: cfg.Name, ca: ca, backend: backend, metrics: reg,
				ready: apiserver.StoreReady(backend.KV), dataDir: cfg.DataDir, log: log,
				bootstrap: &apiserver.BootstrapConfig{CA: ca, StoreMembers: storeMembers(srv)}})
			if err != nil {
				return err
			}
			go ensureServerToken(ctx, ca, apiURL, cfg.DataDir, log)
			loopCfg, err := loopbackConfig(ca, apiURL, leaderUser, []string{pki.AdminOrganization})
			if err != nil {
				return err
			}
			loops, err := leaderLoops(f, disabled, cfg.Name, reg, log)
			if err != nil {
				return err
			}
			runRaftLeaderLoops(ctx, srv, cfg.Name, loopCfg, loops, reg, log)
		}
	}
	if contains(disabled, "apiserver") {
		for _, c := range []string{"scheduler", "controllers"} {
			if !contains(disabled, c) {
				log.Warn("not running the leader loops on this replica: they use its API server, which is disabled", "component", c)
			}
		}
	}
	if addr := str("metrics-listen"); addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/health", srv.HealthHandler())
		if on, _ := f.GetBool("enable-pprof"); on {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--metrics-listen %s: %w", addr, err)
		}
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
		return nil
	case <-srv.Removed():
		return errors.New("this member was removed from the cluster: wipe its --data-dir and start it with --join to add it again")
	}
}

// serverTLS mints this member's serving, peer and client certificates from
// the cluster CA for its advertised addresses.
func serverTLS(ca *pki.CA, cfg raftstore.Config) (*raftstore.TLSConfig, error) {
	hosts := []string{"localhost", "127.0.0.1"}
	for _, a := range []string{cfg.AdvertisePeer, cfg.AdvertiseStore, cfg.PeerListen, cfg.StoreListen} {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" && !contains(hosts, h) {
			if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
				continue
			}
			hosts = append(hosts, h)
		}
	}
	store, err := ca.ServerConfig(cfg.Name, hosts)
	if err != nil {
		return nil, err
	}
	peerServer, peerClient, err := ca.PeerConfigs(cfg.Name, hosts)
	if err != nil {
		return nil, err
	}
	clientCert, err := ca.IssueTLS(pki.CertRequest{CommonName: cfg.Name, Client: true})
	if err != nil {
		return nil, err
	}
	client := &tls.Config{Certificates: []tls.Certificate{clientCert}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	return &raftstore.TLSConfig{Store: store, PeerServer: peerServer, PeerClient: peerClient, Client: client}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// newLogger builds the slog logger from --log-level and --log-format.
func newLogger(cmd *cobra.Command) (*slog.Logger, error) {
	levelName, _ := cmd.Flags().GetString("log-level")
	format, _ := cmd.Flags().GetString("log-format")
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", levelName)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// exportRaftMetrics publishes hashicorp/raft's own timings (commit time,
// log dispatch, follower appends, FSM apply) as cairn_raft_* summaries.
// Raft reports them through go-metrics' process-wide sink.
func exportRaftMetrics(reg prometheus.Registerer) error {
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Registerer: reg, Expiration: time.Minute})
	if err != nil {
		return err
	}
	conf := gometrics.DefaultConfig("cairn")
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false
	conf.EnableServiceLabel = false
	_, err = gometrics.NewGlobal(conf, sink)
	return err
}
