package main

import (
	"context"
	"log/slog"
	"time"

	"cairn/internal/kubeconfig"
	"cairn/internal/pki"
	"cairn/leader"
	"cairn/raftstore"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// leaderUser is the identity of the leader-only loops inside a server.
const leaderUser = "system:cairn-leader"

// loopbackConfig is a client configuration for this server's own API
// server, with a fresh client certificate for user.
func loopbackConfig(ca *pki.CA, url, user string, groups []string) (*rest.Config, error) {
	b, err := kubeconfig.Build(ca, kubeconfig.Options{Servers: []string{url}, User: user, Groups: groups})
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		return nil, err
	}
	// The loops write at the cluster's pace (the scheduler binds
	// thousands of pods a second), not at client-go's default 5/s.
	cfg.QPS, cfg.Burst = 5000, 10000
	return cfg, nil
}

// runRaftLeaderLoops runs the leader-only loops on this replica whenever
// it leads the store, fenced on its leadership epoch.
func runRaftLeaderLoops(ctx context.Context, srv *raftstore.Server, name string, cfg *rest.Config,
	loops []leader.Loop, reg prometheus.Registerer, log *slog.Logger) {
	epoch := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cairn_leader_epoch", Help: "Leadership epoch under which this server last started the leader loops.",
	})
	claim := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cairn_leader_claim_seconds", Help: "Time from this server's leader barrier to its first fenced write, last leadership.",
	})
	reg.MustRegister(epoch, claim)
	r := &leader.RaftColocated{
		Store: srv, Identity: name, Config: cfg, Loops: loops, Logger: log.With("component", "leader"),
		OnStarted: func(e uint64, since time.Duration) {
			epoch.Set(float64(e))
			claim.Set(since.Seconds())
		},
	}
	go r.Run(ctx)
}

// leaderLoops returns the leader-only loops enabled on this server.
func leaderLoops(f *pflag.FlagSet, disabled []string, name string, reg prometheus.Registerer, log *slog.Logger) ([]leader.Loop, error) {
	var loops []leader.Loop
	if !contains(disabled, "controllers") {
		m, err := controllerManager(f)
		if err != nil {
			return nil, err
		}
		m.Logger = log.With("component", "controllers")
		loops = append(loops, leader.Loop{Name: "controllers", Run: m.Run})
	}
	if !contains(disabled, "scheduler") {
		loop, err := schedulerLoop(f, name, reg, log.With("component", "scheduler"))
		if err != nil {
			return nil, err
		}
		loops = append(loops, loop)
	}
	return loops, nil
}
