// Package podutil holds the pod predicates the workload controllers share:
// readiness, availability after minReadySeconds, and whether a pod still
// counts toward its owner.
package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReadyCondition returns pod's Ready condition, or nil.
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	c := ReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable reports whether pod has been ready for at least
// minReadySeconds at now. Kubernetes counts a pod available only once that
// time has strictly passed.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !IsReady(pod) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	c := ReadyCondition(pod)
	return !c.LastTransitionTime.IsZero() &&
		c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// IsTerminal reports whether pod has finished for good.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsActive reports whether pod counts toward its owner's replicas: it has
// neither finished nor begun terminating.
func IsActive(pod *corev1.Pod) bool {
	return !IsTerminal(pod) && pod.DeletionTimestamp == nil
}

// FilterActive returns the active pods of pods.
func FilterActive(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if IsActive(p) {
			out = append(out, p)
		}
	}
	return out
}
