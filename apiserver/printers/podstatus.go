package printers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSummary is what the READY, STATUS and RESTARTS cells of a pod say.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	// lastRestart is when the most recent counted restart happened (the
	// previous instance of a container finished), zero if unknown.
	lastRestart metav1.Time
}

// summarizePod computes a pod's READY, STATUS and RESTARTS as kubectl
// does. The rules, in order:
//
//   - STATUS starts as the phase, replaced by status.reason when set (e.g.
//     Evicted) and by SchedulingGated while scheduling gates hold the pod.
//   - Init containers run in order. The first one not yet done decides
//     STATUS: "Init:<reason>" when it waits or failed with a reason,
//     "Init:ExitCode:N" or "Init:Signal:N" when it failed without one, else
//     "Init:i/n" (i init containers done out of n). Sidecars (init
//     containers with restartPolicy Always) count as done once started, and
//     count in READY like regular containers.
//   - Once initialized, regular containers are read from last to first so
//     the first container's state wins: a waiting reason
//     (CrashLoopBackOff, ImagePullBackOff), a terminated reason (Completed,
//     Error, OOMKilled) or "ExitCode:N"/"Signal:N". If the result is
//     Completed but some container still runs, STATUS is Running when the
//     pod is Ready and NotReady otherwise.
//   - A pod being deleted shows Terminating, or Unknown when its node is
//     lost; a pod that already finished keeps its final status.
//   - RESTARTS adds up restarts of the containers that matter at this
//     stage: init containers while initializing, sidecars and regular
//     containers after.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	initializing, sidecarRestarts, sidecarLastRestart := s.readInitContainers(pod, sidecars)
	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		// Init container restarts no longer matter once the pod runs;
		// sidecars keep running, so theirs still do.
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLastRestart
		s.readContainers(pod)
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeLostReason:
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// readInitContainers applies the init container rules of summarizePod.
// It reports whether the pod is still initializing, and the restarts of
// sidecars alone, which still count once the pod is initialized.
func (s *podSummary) readInitContainers(pod *corev1.Pod, sidecars map[string]bool) (initializing bool, sidecarRestarts int, sidecarLast metav1.Time) {
	n := len(pod.Spec.InitContainers)
	for i, c := range pod.Status.InitContainerStatuses {
		s.restarts += int(c.RestartCount)
		s.lastRestart = later(s.lastRestart, c.LastTerminationState)
		if sidecars[c.Name] {
			sidecarRestarts += int(c.RestartCount)
			sidecarLast = later(sidecarLast, c.LastTerminationState)
		}
		t := c.State.Terminated
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case sidecars[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				s.ready++
			}
			continue
		case t != nil:
			s.status = "Init:" + terminatedReason(t)
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + c.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, n)
		}
		return true, sidecarRestarts, sidecarLast
	}
	return false, sidecarRestarts, sidecarLast
}

// readContainers applies the regular container rules of summarizePod.
func (s *podSummary) readContainers(pod *corev1.Pod) {
	running := false
	statuses := pod.Status.ContainerStatuses
	for i := len(statuses) - 1; i >= 0; i-- {
		c := statuses[i]
		s.restarts += int(c.RestartCount)
		s.lastRestart = later(s.lastRestart, c.LastTerminationState)
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			s.status = c.State.Waiting.Reason
		case c.State.Terminated != nil:
			s.status = terminatedReason(c.State.Terminated)
		case c.Ready && c.State.Running != nil:
			running = true
			s.ready++
		}
	}
	if s.status == "Completed" && running {
		if podConditionTrue(pod, corev1.PodReady) {
			s.status = "Running"
		} else {
			s.status = "NotReady"
		}
	}
}

// terminatedReason is the reason a container ended, or its signal or exit
// code when the runtime gave no reason.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// later returns the later of last and the end of the container's previous
// instance, which is when it restarted.
func later(last metav1.Time, previous corev1.ContainerState) metav1.Time {
	if t := previous.Terminated; t != nil && last.Before(&t.FinishedAt) {
		return t.FinishedAt
	}
	return last
}
