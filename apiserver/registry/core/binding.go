package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateBinding checks a pods/binding request body: it must name a node.
func ValidateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// BindPod assigns pod to the node named by b, as the scheduler's
// pods/binding request does: it sets spec.nodeName, copies the binding's
// annotations and marks the pod scheduled at now. It returns a 409
// Conflict, as Kubernetes does, when the pod is already bound, being
// deleted, still gated, or not the pod the binding's uid names. The caller
// validates b first and stores pod with the usual resourceVersion check.
func BindPod(pod *corev1.Pod, b *corev1.Binding, now metav1.Time) error {
	conflict := func(format string, args ...any) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, b.Name, fmt.Errorf(format, args...))
	}
	switch {
	case b.UID != "" && b.UID != pod.UID:
		return conflict("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID)
	case pod.DeletionTimestamp != nil:
		return conflict("pod %s is being deleted, cannot be assigned to a host", pod.Name)
	case pod.Spec.NodeName != "":
		return conflict("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
	case len(pod.Spec.SchedulingGates) != 0:
		return conflict("pod %v has non-empty .spec.schedulingGates", pod.Name)
	}
	pod.Spec.NodeName = b.Target.Name
	if len(b.Annotations) > 0 && pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range b.Annotations {
		pod.Annotations[k] = v
	}
	SetPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, now)
	return nil
}

// SetPodCondition adds or replaces the condition of c's type; the
// transition time moves only when the status does, so clients can tell how
// long a pod has been in a state.
func SetPodCondition(s *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	for i := range s.Conditions {
		old := &s.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		*old = c
		return
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	s.Conditions = append(s.Conditions, c)
}
