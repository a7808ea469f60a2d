package deployment

import (
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// isRollingUpdate reports whether d rolls out with RollingUpdate.
func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// resolveFenceposts turns maxSurge and maxUnavailable into pod counts for
// desired replicas: surge rounds up, unavailability down, and should both
// come to zero, one pod may be unavailable so that the rollout can move.
func resolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		s = 0 // validation rejects such values
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

// maxSurge is how many pods d may run above its replicas during a
// rollout.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil {
		return 0
	}
	s, _ := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return s
}

// maxUnavailable is how many of d's replicas may be unavailable during a
// rollout.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil || *d.Spec.Replicas == 0 {
		return 0
	}
	_, u := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return min(u, *d.Spec.Replicas)
}

// specReplicas sums spec.replicas over sets (nil entries skipped).
func specReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += *rs.Spec.Replicas
		}
	}
	return n
}

// actualReplicas sums status.replicas.
func actualReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += rs.Status.Replicas
		}
	}
	return n
}

// readyReplicas sums status.readyReplicas.
func readyReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += rs.Status.ReadyReplicas
		}
	}
	return n
}

// availableReplicas sums status.availableReplicas.
func availableReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// availableAfterScaleDown sums, per set, the available pods it will keep:
// a set just scaled down may still report the pods it is about to delete,
// which must not count toward the minimum kept during a rollout.
func availableAfterScaleDown(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
		}
	}
	return n
}

// activeSets returns the sets with replicas to run.
func activeSets(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// equalIgnoreHash reports whether two pod templates are the same but for
// the pod-template-hash label the controller adds to ReplicaSets.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

// byCreation orders sets oldest first, by name among equals.
func byCreation(sets []*appsv1.ReplicaSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		a, b := sets[i], sets[j]
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// byRevision orders sets by revision, oldest first (creation breaks ties).
func byRevision(sets []*appsv1.ReplicaSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		ri, rj := revision(sets[i]), revision(sets[j])
		if ri == rj {
			a, b := sets[i], sets[j]
			if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
				return a.Name < b.Name
			}
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return ri < rj
	})
}

// bySizeThenAge orders sets largest first; newer first among equal sizes
// when newerFirst, else older first. Proportional scaling gives leftovers
// to the first.
func bySizeThenAge(sets []*appsv1.ReplicaSet, newerFirst bool) {
	sort.SliceStable(sets, func(i, j int) bool {
		a, b := sets[i], sets[j]
		if *a.Spec.Replicas != *b.Spec.Replicas {
			return *a.Spec.Replicas > *b.Spec.Replicas
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		if newerFirst {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// findNewReplicaSet returns the oldest set whose template is d's, or nil.
func findNewReplicaSet(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), sets...)
	byCreation(sorted)
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns every set but the new one.
func findOldReplicaSets(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, sets)
	var old []*appsv1.ReplicaSet
	for _, rs := range sets {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// newRSNewReplicas is the size the new set may grow to now: all of
// replicas under Recreate; under RollingUpdate as much as the surge allows
// over the pods of every set.
func newRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRollingUpdate(d) {
		return *d.Spec.Replicas
	}
	current := specReplicas(all)
	maxTotal := *d.Spec.Replicas + maxSurge(d)
	if current >= maxTotal {
		return *newRS.Spec.Replicas
	}
	up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
	return *newRS.Spec.Replicas + up
}

// isSaturated reports whether rs runs all of d's replicas, available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// activeOrLatest returns the only set with replicas, or the newest set
// when none has any; nil when several have replicas.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	all := append([]*appsv1.ReplicaSet(nil), old...)
	if newRS != nil {
		all = append(all, newRS)
	}
	byCreation(all)
	active := activeSets(all)
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return all[len(all)-1]
	case 1:
		return active[0]
	}
	return nil
}

// proportion is how many replicas rs gains (or loses, when negative) of
// toAdd still to distribute, given added already distributed: its share of
// the Deployment's new size, by the max-replicas it was sized for.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	frac := fraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(frac, allowed)
	}
	return max(frac, allowed)
}

// fraction is rs's share of the change to d's size: its size scaled by
// d's new replicas+maxSurge over the max-replicas it was sized for, less
// its size.
func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	newMax := *d.Spec.Replicas + maxSurge(d)
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	size := float64(*rs.Spec.Replicas) * float64(newMax) / float64(annotated)
	return int32(math.Round(size)) - *rs.Spec.Replicas
}
