package leader

import (
	"context"
	"log/slog"
	"time"

	"cairn/internal/fence"
	"cairn/raftstore"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Where the Raft-colocated leadership is shown through the API.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "cairn-leader"
)

// RaftColocated runs the leader-only loops on the replica that leads the
// store. Once the replica's leader barrier has committed a new epoch it
// claims the cairn-leader Lease (its first write, fenced on that epoch)
// and starts the loops with a client fenced the same way; when Raft
// leadership is lost they are stopped through one context.
type RaftColocated struct {
	// Store is this server's store replica.
	Store *raftstore.Server
	// Identity is this server's name, shown as the Lease's holder.
	Identity string
	// Config reaches this server's API server with an identity allowed to
	// do what the loops do.
	Config *rest.Config
	// Loops are run while this replica leads.
	Loops []Loop
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// LeaseDuration is the cairn-leader Lease's duration; it is renewed
	// every third of it. Default 15s. The Lease is informational: Raft,
	// not the Lease, decides who leads.
	LeaseDuration time.Duration
	// OnStarted, if set, is called after the first fenced write of each
	// leadership, just before the loops start (for metrics and tests).
	OnStarted func(epoch uint64, sinceBarrier time.Duration)
}

// Run follows this replica's leadership until ctx ends.
func (r *RaftColocated) Run(ctx context.Context) error {
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.LeaseDuration <= 0 {
		r.LeaseDuration = 15 * time.Second
	}
	var last uint64
	for {
		changed := r.Store.LeadershipChanged()
		if lead, ok := r.Store.Leadership(); ok && lead.Epoch != last {
			last = lead.Epoch
			r.lead(ctx, lead)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// lead runs one leadership: claim the Lease, start the loops, renew the
// Lease, and stop everything when the leadership or ctx ends.
func (r *RaftColocated) lead(parent context.Context, lead raftstore.Leadership) {
	start := time.Now()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	stop := context.AfterFunc(lead.Context, cancel)
	defer stop()

	log := r.Logger.With("epoch", lead.Epoch)
	cfg := Fenced(r.Config, fence.Leader(lead.Epoch))
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error("leader: cannot build the fenced client", "err", err)
		return
	}
	if !r.claim(ctx, log, client, true) {
		return
	}
	since := time.Since(start)
	log.Info("leadership claimed; starting the leader loops", "holder", r.Identity, "since_barrier", since.Round(time.Millisecond))
	if r.OnStarted != nil {
		r.OnStarted(lead.Epoch, since)
	}
	go r.renew(ctx, log, client)
	runLoops(ctx, log, cfg, r.Loops)
	log.Info("leadership ended; leader loops stopped")
}

// renew keeps the Lease's renewTime fresh while ctx lasts.
func (r *RaftColocated) renew(ctx context.Context, log *slog.Logger, client kubernetes.Interface) {
	t := time.NewTicker(r.LeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.claim(ctx, log, client, false)
		}
	}
}

// claim writes the Lease with this replica as holder, retrying transient
// failures until it lands, ctx ends, or (when retry is false) once. A
// fenced refusal means a newer leader exists: it gives up at once.
func (r *RaftColocated) claim(ctx context.Context, log *slog.Logger, client kubernetes.Interface, retry bool) bool {
	for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		err := r.writeLease(ctx, client)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if IsFenced(err) {
			log.Warn("leader: a newer leader has taken over; this one stops", "err", err)
			return false
		}
		log.Warn("leader: writing the leader Lease failed", "err", err, "retry", retry)
		if !retry {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
	}
}

func (r *RaftColocated) writeLease(ctx context.Context, client kubernetes.Interface) error {
	leases := client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	cur, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: LeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(r.Identity), LeaseDurationSeconds: ptr.To(int32(r.LeaseDuration / time.Second)),
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(int32(0)),
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l := cur.DeepCopy()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != r.Identity {
		l.Spec.HolderIdentity = ptr.To(r.Identity)
		l.Spec.AcquireTime = &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.RenewTime = &now
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.LeaseDuration / time.Second))
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// IsFenced reports whether err is the API server's refusal of a write
// whose leadership has passed.
func IsFenced(err error) bool { return fence.IsRefused(err) }
