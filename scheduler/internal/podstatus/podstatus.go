// Package podstatus writes the scheduler's parts of a pod's status (the
// PodScheduled condition, nominatedNodeName, a DisruptionTarget
// condition on preemption victims) as strategic merge patches of the
// status subresource, so they never conflict with other writers.
package podstatus

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
)

// SetCondition sets the condition of c's type in s and reports whether
// anything a reader would notice changed. The transition time moves only
// when the status does.
func SetCondition(s *v1.PodStatus, c v1.PodCondition, now metav1.Time) bool {
	for i := range s.Conditions {
		old := &s.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return false
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		*old = c
		return true
	}
	c.LastTransitionTime = now
	s.Conditions = append(s.Conditions, c)
	return true
}

// Patch sends the difference between pod's status and cur as a strategic
// merge patch of the status subresource; no difference, no request.
func Patch(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, cur *v1.PodStatus) error {
	oldData, err := json.Marshal(v1.Pod{Status: pod.Status})
	if err != nil {
		return fmt.Errorf("podstatus: %w", err)
	}
	newData, err := json.Marshal(v1.Pod{Status: *cur})
	if err != nil {
		return fmt.Errorf("podstatus: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &v1.Pod{})
	if err != nil {
		return fmt.Errorf("podstatus: patch of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if string(patch) == "{}" {
		return nil
	}
	_, err = cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("podstatus: patch status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
