package defaultpreemption

import (
	"context"
	"errors"
	"fmt"

	"cairn/scheduler/framework"
	"cairn/scheduler/internal/podstatus"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// prepare evicts the chosen victims (a DisruptionTarget condition, then a
// graceful delete, as Kubernetes does) and takes the node's nomination
// away from lower-priority pods, which could no longer fit there.
func (pl *DefaultPreemption) prepare(ctx context.Context, c candidate, pod *framework.PodInfo) error {
	cs := pl.h.ClientSet()
	var errs []error
	for _, v := range c.victims {
		victim := v.Pod
		if victim.DeletionTimestamp != nil {
			continue
		}
		status := victim.Status.DeepCopy()
		podstatus.SetCondition(status, v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
			Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", pod.Pod.Spec.SchedulerName),
		}, metav1.Now())
		if err := podstatus.Patch(ctx, cs, victim, status); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		uid := victim.UID
		err := cs.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("defaultpreemption: delete victim %s/%s: %w", victim.Namespace, victim.Name, err))
			continue
		}
		if r := pl.h.EventRecorder(); r != nil {
			r.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", pod.Pod.UID, c.node)
		}
		pl.h.Logger().Info("preempted pod", "victim", victim.Namespace+"/"+victim.Name, "preemptor", pod.Pod.Namespace+"/"+pod.Pod.Name, "node", c.node)
	}
	if n := pl.h.Nominator(); n != nil {
		for _, p := range n.NominatedPodsForNode(c.node) {
			if p.Priority >= pod.Priority {
				continue
			}
			status := p.Pod.Status.DeepCopy()
			status.NominatedNodeName = ""
			if err := podstatus.Patch(ctx, cs, p.Pod, status); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			n.DeleteNominatedPodIfExists(p.Pod)
		}
	}
	return errors.Join(errs...)
}
