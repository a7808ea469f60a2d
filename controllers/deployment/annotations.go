package deployment

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations the controller keeps on Deployments and their ReplicaSets;
// kubectl rollout reads them.
const (
	// RevisionAnnotation numbers a ReplicaSet's rollout (1, 2, ...); the
	// Deployment carries its newest ReplicaSet's.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists a ReplicaSet's earlier revisions,
	// when a rollback has brought it back.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's replicas when the
	// ReplicaSet was last scaled; a difference means the Deployment was
	// scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas+maxSurge at that time, the base of
	// proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"

	lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
	rollbackToAnnotation  = "deprecated.deployment.rollback.to"

	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)

// annotationsNotCopied are the Deployment annotations that are not copied
// to its ReplicaSets (kubectl rollout undo skips the same ones back).
var annotationsNotCopied = map[string]bool{
	lastAppliedAnnotation:     true,
	RevisionAnnotation:        true,
	RevisionHistoryAnnotation: true,
	DesiredReplicasAnnotation: true,
	MaxReplicasAnnotation:     true,
	rollbackToAnnotation:      true,
}

// revision is a set's revision annotation, 0 when absent or malformed.
func revision(o metav1.Object) int64 {
	v, err := strconv.ParseInt(o.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// maxRevision is the highest revision of sets.
func maxRevision(sets []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range sets {
		m = max(m, revision(rs))
	}
	return m
}

// copyAnnotations copies d's annotations to rs but for the controller's
// own, reporting a change.
func copyAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if annotationsNotCopied[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setNewReplicaSetAnnotations brings the new set's annotations up to date:
// d's own annotations, the revision newRevision unless the set already has
// a later one, the earlier revision moved into the history when a rollback
// reuses the set, and, for a set about to be created, the replica
// annotations. It reports whether anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyAnnotations(d, rs)
	old, had := rs.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(old, 10, 64)
	if err != nil {
		if old != "" {
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldRev < newRev {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			appendRevisionHistory(rs, old)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds old to rs's revision history, dropping the
// oldest entries to stay under maxRevisionHistoryChars.
func appendRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	hist := rs.Annotations[RevisionHistoryAnnotation]
	if hist == "" {
		rs.Annotations[RevisionHistoryAnnotation] = old
		return
	}
	revs := strings.Split(hist, ",")
	total := len(hist) + len(old) + 1
	start := 0
	for total > maxRevisionHistoryChars && start < len(revs) {
		total -= len(revs[start]) + 1
		start++
	}
	if total <= maxRevisionHistoryChars {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(revs[start:], old), ",")
	}
}

// setReplicasAnnotations records desired and max replicas on rs,
// reporting a change.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

// replicasAnnotationsNeedUpdate reports whether rs's replica annotations
// differ from desired and maxReplicas.
func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// intAnnotation is rs's annotation key as a number.
func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}
