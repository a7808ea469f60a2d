package scheduler

import (
	"context"
	"errors"
	"time"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
)

// errNoNodes is reported while the cluster has no node at all.
var errNoNodes = errors.New("no nodes available to schedule pods")

// scheduleOne pops one pod and runs its scheduling cycle; binding
// continues asynchronously.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	qp, err := s.queue.Pop()
	if err != nil {
		return
	}
	cycle := s.queue.SchedulingCycle()
	// Only this attempt's rejections decide which events retry the pod.
	qp.UnschedulablePlugins = nil
	pod := qp.Pod
	prof := s.profileFor(pod)
	if prof == nil || pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		s.queue.Done(pod.UID)
		return
	}
	start := s.clock.Now()
	fwk := prof.fwk
	state := framework.NewCycleState()
	s.cache.UpdateSnapshot(s.snapshot)

	host, err := s.schedulePod(ctx, fwk, state, qp.PodInfo)
	if err != nil {
		var nominate *string
		var fe *framework.FitError
		if errors.As(err, &fe) {
			qp.UnschedulablePlugins = fe.Diagnosis.UnschedulablePlugins
			if fwk.HasPostFilterPlugins() {
				res, st := fwk.RunPostFilterPlugins(ctx, state, qp.PodInfo, fe.Diagnosis.NodeToStatus)
				if st.Code() == framework.Error {
					s.log.Error("preemption failed", "pod", key(pod), "err", st.AsError())
				}
				if res != nil {
					nominate = &res.NominatedNodeName
				}
				fe.Diagnosis.PostFilterMsg = st.Message()
			}
		}
		s.failed(ctx, prof, qp, cycle, err, nominate, start)
		return
	}

	// Assume: count the pod on host now, so the next cycle sees it even
	// though the binding has not happened yet.
	assumedPod := *pod
	assumedPod.Spec.NodeName = host
	assumed := qp.PodInfo.WithPod(&assumedPod)
	if err := s.cache.AssumePod(assumed); err != nil {
		s.failed(ctx, prof, qp, cycle, err, nil, start)
		return
	}
	if st := fwk.RunReservePluginsReserve(ctx, state, assumed, host); !st.IsSuccess() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		if err := s.cache.ForgetPod(&assumedPod); err != nil {
			s.log.Error("cache: forget pod", "pod", key(pod), "err", err)
		}
		s.failed(ctx, prof, qp, cycle, st.AsError(), nil, start)
		return
	}
	if !s.goWrite(ctx, func() { s.bind(ctx, prof, state, qp, assumed, host, cycle, start) }) {
		// Shutting down: undo the assumption, the next leader will
		// schedule the pod.
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		if err := s.cache.ForgetPod(&assumedPod); err != nil {
			s.log.Error("cache: forget pod", "pod", key(pod), "err", err)
		}
		s.queue.Done(pod.UID)
	}
}

// bind runs the bind plugins. On failure the reservation is undone, the
// assumed pod forgotten, and the pod requeued with backoff.
func (s *Scheduler) bind(ctx context.Context, prof *profile, state *framework.CycleState, qp *framework.QueuedPodInfo, assumed *framework.PodInfo, host string, cycle int64, start time.Time) {
	fwk := prof.fwk
	if st := fwk.RunBindPlugins(ctx, state, assumed, host); !st.IsSuccess() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumed, host)
		if err := s.cache.ForgetPod(assumed.Pod); err != nil {
			s.log.Error("cache: forget pod", "pod", key(assumed.Pod), "err", err)
		}
		// The room it held is free again for others.
		s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete})
		s.failed(ctx, prof, qp, cycle, st.AsError(), nil, start)
		return
	}
	s.queue.Done(qp.Pod.UID)
	s.metrics.observe(fwk.ProfileName(), resultScheduled, s.since(start))
	s.metrics.e2e.WithLabelValues(fwk.ProfileName()).Observe(s.since(qp.Added).Seconds())
	prof.recorder.Eventf(qp.Pod, v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", qp.Pod.Namespace, qp.Pod.Name, host)
	s.log.Debug("bound pod", "pod", key(qp.Pod), "node", host, "attempts", qp.Attempts)
}
