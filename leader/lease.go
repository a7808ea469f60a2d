package leader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"cairn/internal/fence"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseElector runs the leader-only loops of a component started on its
// own (`cairn scheduler`, `cairn controller-manager`), elected through a
// coordination.k8s.io Lease with client-go's leader election, so it
// interoperates with any other client-go component. The loops' writes are
// fenced on the Lease's holder and transitions, which the API server
// records with every write of the Lease: once another candidate takes the
// Lease, the store refuses them.
type LeaseElector struct {
	// Config reaches the API server.
	Config *rest.Config
	// Namespace and Name locate the Lease (e.g. kube-system/cairn-scheduler).
	Namespace, Name string
	// Identity is this candidate's holder identity; unique per process.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings; defaults 15s, 10s and 2s, as Kubernetes'.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Loops are run while this candidate holds the Lease.
	Loops []Loop
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Run campaigns for the Lease until ctx ends, running the loops during
// each term it wins. The Lease is released when ctx ends, so a successor
// need not wait for it to expire.
func (e *LeaseElector) Run(ctx context.Context) error {
	if e.Namespace == "" || e.Name == "" || e.Identity == "" {
		return errors.New("leader: a Lease namespace, name and identity are required")
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	if e.LeaseDuration <= 0 {
		e.LeaseDuration = 15 * time.Second
	}
	if e.RenewDeadline <= 0 {
		e.RenewDeadline = 10 * time.Second
	}
	if e.RetryPeriod <= 0 {
		e.RetryPeriod = 2 * time.Second
	}
	client, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, e.Namespace, e.Name,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: e.Identity})
	if err != nil {
		return err
	}
	log := e.Logger.With("lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
			ReleaseOnCancel: true, Name: e.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { e.lead(ctx, log, lock) },
				OnStoppedLeading: func() { log.Info("stopped leading") },
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}

// lead runs the loops fenced on the term just won.
func (e *LeaseElector) lead(ctx context.Context, log *slog.Logger, lock resourcelock.Interface) {
	rec, _, err := lock.Get(ctx)
	if err != nil {
		log.Error("leader: reading the won Lease failed; giving up this term", "err", err)
		return
	}
	if rec.HolderIdentity != e.Identity {
		log.Warn("leader: the Lease names another holder; giving up this term", "holder", rec.HolderIdentity)
		return
	}
	f := fence.Lease(e.Namespace, e.Name, rec.HolderIdentity, int32(rec.LeaderTransitions))
	log.Info("started leading; starting the leader loops", "transitions", rec.LeaderTransitions)
	runLoops(ctx, log, Fenced(e.Config, f), e.Loops)
}
