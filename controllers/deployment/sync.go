package deployment

import (
	"context"
	"fmt"
	"reflect"

	"cairn/controllers/internal/controllerref"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// sync converges one Deployment.
func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := dc.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		dc.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return dc.updateStatus(ctx, d)
		}
		return nil
	}
	sets, err := dc.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, old, err := dc.replicaSetsAndSyncRevision(ctx, d, sets, false)
		if err != nil {
			return err
		}
		return dc.syncStatus(ctx, append(old, newRS), newRS, d)
	}
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return dc.scaleOnly(ctx, d, sets)
	}
	scaling, err := dc.isScalingEvent(ctx, d, sets)
	if err != nil {
		return err
	}
	if scaling {
		return dc.scaleOnly(ctx, d, sets)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return dc.rolloutRecreate(ctx, d, sets)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return dc.rolloutRolling(ctx, d, sets)
	}
	return fmt.Errorf("deployment: unexpected strategy type %q", d.Spec.Strategy.Type)
}

// claimReplicaSets returns the ReplicaSets d owns, after adopting matching
// orphans and releasing owned sets it no longer selects.
func (dc *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment: %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	candidates, err := controllerref.Candidates[*appsv1.ReplicaSet](dc.rsIndex, d.Namespace, string(d.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: d, Kind: kind, Match: controllerref.SelectorMatch(sel),
		CanAdopt: controllerref.RecheckDeletionTimestamp(d.UID, func(ctx context.Context) (metav1.Object, error) {
			return dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		}),
	}
	return controllerref.ClaimReplicaSets(ctx, m, dc.client, candidates)
}

// podsBySet returns the pods of d's sets, by set UID.
func (dc *Controller) podsBySet(sets []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	out := make(map[types.UID][]*corev1.Pod, len(sets))
	for _, rs := range sets {
		pods, err := controllerref.Owned[*corev1.Pod](dc.podIndex, string(rs.UID))
		if err != nil {
			return nil, err
		}
		out[rs.UID] = pods
	}
	return out, nil
}

// isScalingEvent reports whether only d's replicas changed since its
// active sets were last sized.
func (dc *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := dc.replicaSetsAndSyncRevision(ctx, d, sets, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeSets(append(old, newRS)) {
		desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
		if ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// scaleOnly is the sync of a paused Deployment or of a scale change: size
// the sets, never roll out.
func (dc *Controller) scaleOnly(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.replicaSetsAndSyncRevision(ctx, d, sets, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncStatus(ctx, append(old, newRS), newRS, d)
}

// scale sizes d's sets for d's replicas: a single active set takes them
// all; with a saturated new set the old ones go to zero; otherwise the
// difference is spread over the active sets in proportion to their sizes.
func (dc *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, old); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := dc.scaleAndRecord(ctx, rs, *d.Spec.Replicas, d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range activeSets(old) {
			if _, _, err := dc.scaleAndRecord(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	sizes, op := proportionalSizes(d, activeSets(append(old, newRS)))
	for _, s := range sizes {
		if _, _, err := dc.scaleReplicaSet(ctx, s.rs, s.size, d, op); err != nil {
			return err
		}
	}
	return nil
}

// sized is a set and the size it should get.
type sized struct {
	rs   *appsv1.ReplicaSet
	size int32
}

// proportionalSizes spreads the change in d's allowed pods (replicas plus
// surge) over the active sets: each gets its share, rounded, and the
// largest takes the leftover. Equal sets favour the newer when growing and
// shrink the older first.
func proportionalSizes(d *appsv1.Deployment, active []*appsv1.ReplicaSet) ([]sized, string) {
	sets := append([]*appsv1.ReplicaSet(nil), active...)
	var allowed int32
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(sets)
	op := ""
	switch {
	case toAdd > 0:
		bySizeThenAge(sets, true)
		op = "up"
	case toAdd < 0:
		bySizeThenAge(sets, false)
		op = "down"
	}
	var added int32
	out := make([]sized, len(sets))
	for i, rs := range sets {
		out[i] = sized{rs: rs, size: *rs.Spec.Replicas}
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			out[i].size += p
			added += p
		}
	}
	if len(out) > 0 && toAdd != 0 {
		out[0].size = max(out[0].size+toAdd-added, 0)
	}
	return out, op
}

// scaleAndRecord scales rs to size unless it has it already.
func (dc *Controller) scaleAndRecord(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if *rs.Spec.Replicas == size {
		return false, rs, nil
	}
	op := "down"
	if *rs.Spec.Replicas < size {
		op = "up"
	}
	return dc.scaleReplicaSet(ctx, rs, size, d, op)
}

// scaleReplicaSet writes rs's size and replica annotations when either is
// out of date, and records a ScalingReplicaSet event for a size change.
func (dc *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment, op string) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := *rs.Spec.Replicas != size
	maxReplicas := *d.Spec.Replicas + maxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, *d.Spec.Replicas, maxReplicas) {
		return false, rs, nil
	}
	from := *rs.Spec.Replicas
	cp := rs.DeepCopy()
	*cp.Spec.Replicas = size
	setReplicasAnnotations(cp, *d.Spec.Replicas, maxReplicas)
	updated, err := dc.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, err
	}
	if sizeChanged {
		verb := "Scaled down"
		if op == "up" {
			verb = "Scaled up"
		}
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "%s replica set %s from %d to %d", verb, rs.Name, from, size)
	}
	return sizeChanged, updated, nil
}

// cleanup deletes the oldest old sets beyond revisionHistoryLimit, among
// those fully scaled down and settled.
func (dc *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	byRevision(alive)
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
