package kubelet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusEqual compares statuses as the API would store them.
func statusEqual(a, b corev1.PodStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// writeStatus stores status unless the pod already has it. On a
// conflict it reads the pod again and keeps the conditions others wrote
// meanwhile. It returns the pod as stored.
func (k *Kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) (*corev1.Pod, error) {
	if statusEqual(pod.Status, status) {
		return pod, nil
	}
	next := pod.DeepCopy()
	next.Status = status
	for attempt := 0; ; attempt++ {
		out, err := k.client.CoreV1().Pods(next.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			return out, nil
		}
		if !apierrors.IsConflict(err) || attempt == 2 {
			return nil, fmt.Errorf("kubelet: updating the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		fresh, gerr := k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, fmt.Errorf("kubelet: updating the status of pod %s/%s: %w", pod.Namespace, pod.Name, gerr)
		}
		if fresh.UID != pod.UID {
			return nil, fmt.Errorf("kubelet: pod %s/%s was replaced", pod.Namespace, pod.Name)
		}
		merged := status.DeepCopy()
		for _, c := range fresh.Status.Conditions {
			if !isKubeletCondition(c.Type) && !hasCondition(merged.Conditions, c.Type) {
				merged.Conditions = append(merged.Conditions, c)
			}
		}
		if statusEqual(fresh.Status, *merged) {
			return fresh, nil
		}
		next = fresh
		next.Status = *merged
	}
}

func hasCondition(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return true
		}
	}
	return false
}
