package scheduler

import (
	"context"
	"errors"
	"time"

	"cairn/scheduler/framework"
	"cairn/scheduler/internal/podstatus"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failed handles a pod whose attempt in cycle failed with err: it is
// requeued (unless it is gone or was bound by someone else meanwhile),
// its nomination is updated, and it gets a FailedScheduling event and a
// PodScheduled=False condition.
func (s *Scheduler) failed(ctx context.Context, prof *profile, qp *framework.QueuedPodInfo, cycle int64, err error, nominate *string, start time.Time) {
	pod := qp.Pod
	reason, result := v1.PodReasonSchedulerError, resultError
	var fe *framework.FitError
	if errors.As(err, &fe) {
		reason, result = v1.PodReasonUnschedulable, resultUnschedulable
	}
	s.metrics.observe(prof.fwk.ProfileName(), result, s.since(start))

	cur, getErr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	if getErr != nil || cur.UID != pod.UID {
		s.queue.Done(pod.UID)
		return
	}
	if assigned(cur) {
		s.log.Debug("pod was bound by someone else meanwhile", "pod", key(pod), "node", cur.Spec.NodeName)
		s.queue.Done(pod.UID)
		return
	}
	if nominate != nil {
		if *nominate != "" {
			s.queue.AddNominatedPod(qp.PodInfo, *nominate)
		} else {
			s.queue.DeleteNominatedPodIfExists(pod)
		}
	}
	s.queue.AddUnschedulableIfNotPresent(qp, cycle)
	if apierrors.IsConflict(err) {
		// The API refused the binding, most likely because the pod was
		// bound elsewhere: the informer will tell; saying "failed" on a
		// bound pod would be wrong.
		s.log.Debug("binding conflict", "pod", key(pod), "err", err)
		return
	}
	msg := err.Error()
	if result == resultError {
		s.log.Error("scheduling attempt failed", "pod", key(pod), "err", err)
	} else {
		s.log.Debug("pod is unschedulable", "pod", key(pod), "reason", msg)
	}
	prof.recorder.Event(pod, v1.EventTypeWarning, "FailedScheduling", msg)

	status := cur.Status.DeepCopy()
	podstatus.SetCondition(status, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg}, metav1.NewTime(s.clock.Now()))
	if nominate != nil {
		status.NominatedNodeName = *nominate
	}
	// The update waits for a write slot on its own goroutine: failed is
	// called from bindings, which hold a slot themselves.
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		s.goWrite(ctx, func() {
			if err := podstatus.Patch(ctx, s.client, cur, status); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				s.log.Warn("could not update pod status", "pod", key(pod), "err", err)
			}
		})
	}()
}
