package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate moves d one step along a Recreate rollout: scale every
// old set to zero, wait until none of their pods runs, then create or grow
// the new set to d's replicas.
func (dc *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	// The new set is not created yet: it must not start before the old
	// pods are gone.
	newRS, old, err := dc.replicaSetsAndSyncRevision(ctx, d, sets, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaled := false
	for _, rs := range activeSets(old) {
		s, _, err := dc.scaleAndRecord(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaled = scaled || s
	}
	if scaled {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	pods, err := dc.podsBySet(sets)
	if err != nil {
		return err
	}
	if oldPodsRunning(newRS, old, pods) {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = dc.replicaSetsAndSyncRevision(ctx, d, sets, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if _, _, err := dc.scaleAndRecord(ctx, newRS, *d.Spec.Replicas, d); err != nil {
		return err
	}
	if complete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether an old set still has pods, or any pod
// not of the new set has not finished.
func oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if actualReplicas(old) > 0 {
		return true
	}
	for uid, list := range pods {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range list {
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
