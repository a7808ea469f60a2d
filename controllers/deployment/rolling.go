package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling moves d one step along a rolling update: grow the new set
// within maxSurge, else shrink old sets within maxUnavailable, else (when
// the rollout is complete) prune old revisions; then write the status.
func (dc *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.replicaSetsAndSyncRevision(ctx, d, sets, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledUp, err := dc.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := dc.reconcileOldReplicaSets(ctx, all, activeSets(old), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if complete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

// reconcileNewReplicaSet sizes the new set toward d's replicas as far as
// the surge allows, reporting whether it scaled.
func (dc *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case *newRS.Spec.Replicas == *d.Spec.Replicas:
		return false, nil
	case *newRS.Spec.Replicas > *d.Spec.Replicas:
		scaled, _, err := dc.scaleAndRecord(ctx, newRS, *d.Spec.Replicas, d)
		return scaled, err
	}
	scaled, _, err := dc.scaleAndRecord(ctx, newRS, newRSNewReplicas(d, all, newRS), d)
	return scaled, err
}

// maxScaledDown is how many old pods may go now without d dropping below
// replicas-maxUnavailable available pods, counting the new set's
// not-yet-available pods as unavailable so that a stuck new revision does
// not drain the old one.
func maxScaledDown(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := max(*newRS.Spec.Replicas-newRS.Status.AvailableReplicas, 0)
	return specReplicas(all) - minAvailable - newUnavailable
}

// reconcileOldReplicaSets shrinks old sets: first their unhealthy pods,
// which costs no availability, then healthy ones within maxUnavailable.
func (dc *Controller) reconcileOldReplicaSets(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(old) == 0 {
		return false, nil
	}
	budget := maxScaledDown(d, all, newRS)
	if budget <= 0 {
		return false, nil
	}
	old, cleaned, err := dc.cleanupUnhealthyReplicas(ctx, old, d, budget)
	if err != nil {
		return false, err
	}
	all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaled, err := dc.scaleDownOldReplicaSets(ctx, all, old, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthyReplicas removes up to budget unavailable pods from the
// old sets, oldest set first; the ReplicaSet controller deletes its
// not-ready pods first, so availability does not drop.
func (dc *Controller) cleanupUnhealthyReplicas(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment, budget int32) ([]*appsv1.ReplicaSet, int32, error) {
	old = append([]*appsv1.ReplicaSet(nil), old...)
	byCreation(old)
	var total int32
	for i, rs := range old {
		if total >= budget {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas <= rs.Status.AvailableReplicas {
			continue
		}
		n := min(budget-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		_, updated, err := dc.scaleAndRecord(ctx, rs, *rs.Spec.Replicas-n, d)
		if err != nil {
			return nil, total, err
		}
		total += n
		old[i] = updated
	}
	return old, total, nil
}

// scaleDownOldReplicaSets removes available old pods, oldest set first,
// as long as replicas-maxUnavailable pods stay available.
func (dc *Controller) scaleDownOldReplicaSets(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := availableAfterScaleDown(all)
	if available <= minAvailable {
		return 0, nil
	}
	old = append([]*appsv1.ReplicaSet(nil), old...)
	byCreation(old)
	want := available - minAvailable
	var total int32
	for _, rs := range old {
		if total >= want {
			break
		}
		if *rs.Spec.Replicas == 0 {
			continue
		}
		n := min(*rs.Spec.Replicas, want-total)
		if *rs.Spec.Replicas-n > *rs.Spec.Replicas {
			return total, fmt.Errorf("deployment: invalid scale down of %s/%s by %d", rs.Namespace, rs.Name, n)
		}
		if _, _, err := dc.scaleAndRecord(ctx, rs, *rs.Spec.Replicas-n, d); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
