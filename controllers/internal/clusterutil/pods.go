package clusterutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodReady reports whether pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	return PodCondition(pod, corev1.PodReady) == corev1.ConditionTrue
}

// PodCondition returns the status of pod's condition t, "" if absent.
func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// PodTerminal reports whether pod has finished for good (Succeeded or
// Failed): its containers will not run again.
func PodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// ControllerOf returns the owner reference of obj marked controller, or
// nil.
func ControllerOf(obj metav1.Object) *metav1.OwnerReference {
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return &r
		}
	}
	return nil
}

// ControlledBy reports whether obj's controller is the object with uid.
func ControlledBy(obj metav1.Object, uid types.UID) bool {
	r := ControllerOf(obj)
	return r != nil && r.UID == uid
}

// NodeCondition returns node's condition t, or nil.
func NodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// HasFinalizer reports whether obj carries finalizer f.
func HasFinalizer(obj metav1.Object, f string) bool {
	for _, x := range obj.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
