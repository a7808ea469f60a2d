package podutil

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DeletionCostAnnotation lets users say which pods of a ReplicaSet to
// remove first on scale-down: lower cost goes first.
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// Ranked orders pods so that the ones to delete first come first, as
// Kubernetes' ActivePodsWithRanks does:
//
//  1. unscheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost before higher;
//  5. more Rank (pods doubled up on one node) before less;
//  6. ready for less time before ready for more (so pods not yet
//     available after minReadySeconds go before available ones), on a
//     logarithmic scale so that pods of about the same age are picked at
//     random rather than always the very newest;
//  7. more container restarts before fewer;
//  8. newer before older (same logarithmic scale).
//
// Rank[i] belongs to Pods[i]; a nil Rank ranks every pod the same.
type Ranked struct {
	Pods []*corev1.Pod
	Rank []int
	Now  time.Time
}

// Len is the number of pods, for sort.Interface.
func (r Ranked) Len() int { return len(r.Pods) }

// Swap swaps two pods and their ranks, for sort.Interface.
func (r Ranked) Swap(i, j int) {
	r.Pods[i], r.Pods[j] = r.Pods[j], r.Pods[i]
	if r.Rank != nil {
		r.Rank[i], r.Rank[j] = r.Rank[j], r.Rank[i]
	}
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// Less reports whether pod i should be deleted before pod j.
func (r Ranked) Less(i, j int) bool {
	a, b := r.Pods[i], r.Pods[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	if ra, rb := IsReady(a), IsReady(b); ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if r.Rank != nil && r.Rank[i] != r.Rank[j] {
		return r.Rank[i] > r.Rank[j]
	}
	if IsReady(a) && IsReady(b) {
		ta, tb := ReadyCondition(a).LastTransitionTime.Time, ReadyCondition(b).LastTransitionTime.Time
		if !ta.Equal(tb) {
			return r.newer(a, b, ta, tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return r.newer(a, b, ta, tb)
	}
	return false
}

// newer reports whether ta ranks before tb: a zero time first, then the
// later one, compared by the logarithm of their ages so that pods of a
// similar age tie and are told apart by UID (a stable random pick).
func (r Ranked) newer(a, b *corev1.Pod, ta, tb time.Time) bool {
	if r.Now.IsZero() || ta.IsZero() || tb.IsZero() {
		return afterOrZero(ta, tb)
	}
	da, db := logAge(r.Now, ta), logAge(r.Now, tb)
	if da == db {
		return a.UID < b.UID
	}
	return da < db
}

func afterOrZero(ta, tb time.Time) bool {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero()
	}
	return ta.After(tb)
}

func logAge(now, t time.Time) int64 {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

func deletionCost(pod *corev1.Pod) int32 {
	v, ok := pod.Annotations[DeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func maxRestarts(pod *corev1.Pod) int32 {
	var m int32
	for _, s := range pod.Status.InitContainerStatuses {
		m = max(m, s.RestartCount)
	}
	for _, s := range pod.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}
