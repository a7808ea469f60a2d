package kubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusInput is what a pod's status is computed from.
type statusInput struct {
	Now         time.Time
	RuntimeName string
	HostIPs     []string
	PodIPs      []string
	// SandboxReady is true while the pod's sandbox runs with its network.
	SandboxReady bool
	Views        map[string]containerView
	// Waiting holds why containers that do not run wait, when the
	// kubelet knows better than "ContainerCreating".
	Waiting map[string]waiting
	// Ready and Started are the probes' verdicts on running instances.
	Ready, Started func(c *corev1.Container, id string) bool
	Initialized    bool
	// Terminal is true when the pod's containers will not run again
	// (it ended, or it is deleted and its containers are stopped).
	Terminal bool
	// TerminationMessage reads an exited instance's termination message.
	TerminationMessage func(c *corev1.Container, i *instance) string
}

// metaTime truncates to the second, as the API stores times, so that a
// status compares equal to its stored self.
func metaTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second))
}

// buildStatus computes pod's status, keeping what others own in the
// current one (other conditions, nominatedNodeName, the QoS class).
func buildStatus(pod *corev1.Pod, in statusInput) corev1.PodStatus {
	old := pod.Status
	s := *old.DeepCopy()
	s.HostIP, s.HostIPs = "", nil
	for _, ip := range in.HostIPs {
		s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip})
	}
	if len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	}
	if len(in.PodIPs) > 0 {
		s.PodIP, s.PodIPs = in.PodIPs[0], nil
		for _, ip := range in.PodIPs {
			s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
		}
	} // else: keep the IPs the pod had; a stopped sandbox has none.
	if s.StartTime == nil {
		t := metaTime(in.Now)
		s.StartTime = &t
	}
	s.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, in.containerStatus(&pod.Spec.InitContainers[i], true))
	}
	s.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, in.containerStatus(&pod.Spec.Containers[i], false))
	}
	s.EphemeralContainerStatuses = nil
	for i := range pod.Spec.EphemeralContainers {
		st := in.containerStatus(ephemeralContainer(pod, i), false)
		// Never ready, nor initializing: they serve no traffic and may
		// start before the init containers are done.
		st.Ready = false
		if w := st.State.Waiting; w != nil && w.Reason == reasonPodInitializing {
			w.Reason = reasonContainerCreating
		}
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, st)
	}
	s.Phase = podPhase(pod, s.InitContainerStatuses, s.ContainerStatuses, in.Terminal)
	// The status describes this generation of the spec, as kubelets with
	// PodObservedGenerationTracking say.
	s.ObservedGeneration = pod.Generation
	s.Conditions = in.conditions(pod, &s, old.Conditions)
	return s
}

func (in statusInput) containerID(id string) string {
	return in.RuntimeName + "://" + id
}

// terminated is an exited instance's state.
func (in statusInput) terminated(c *corev1.Container, i *instance) *corev1.ContainerStateTerminated {
	reason := i.Reason
	if reason == "" {
		reason = reasonError
		if i.ExitCode == 0 {
			reason = reasonCompleted
		}
	}
	msg := i.Message
	if in.TerminationMessage != nil {
		if m := in.TerminationMessage(c, i); m != "" {
			msg = m
		}
	}
	return &corev1.ContainerStateTerminated{
		ExitCode: i.ExitCode, Reason: reason, Message: msg,
		StartedAt: metaTime(i.StartedAt), FinishedAt: metaTime(i.FinishedAt),
		ContainerID: in.containerID(i.ID),
	}
}

func (in statusInput) containerStatus(c *corev1.Container, init bool) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
	v := in.Views[c.Name]
	l := v.Latest
	w, hasWaiting := in.Waiting[c.Name]
	if l == nil {
		if !hasWaiting {
			w = waiting{Reason: reasonContainerCreating}
			if !init && !in.Initialized {
				w.Reason = reasonPodInitializing
			}
		}
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		return st
	}
	st.RestartCount = l.RestartCount
	st.ContainerID = in.containerID(l.ID)
	st.ImageID = l.ImageRef
	if v.Previous != nil && v.Previous.State == stateExited {
		st.LastTerminationState.Terminated = in.terminated(c, v.Previous)
	}
	switch l.State {
	case stateRunning:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metaTime(l.StartedAt)}
		started := in.Started == nil || in.Started(c, l.ID)
		*st.Started = started
		if !init || isSidecar(c) {
			st.Ready = started && (in.Ready == nil || in.Ready(c, l.ID))
		}
	case stateExited:
		term := in.terminated(c, l)
		if hasWaiting && !in.Terminal {
			// It will run again: it waits, and its last run is the
			// one that just ended.
			st.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			st.LastTerminationState = corev1.ContainerState{Terminated: term}
		} else {
			st.State.Terminated = term
			// A successful init container stays ready, as in Kubernetes.
			st.Ready = init && !isSidecar(c) && l.ExitCode == 0
		}
	default:
		if !hasWaiting {
			w = waiting{Reason: reasonContainerCreating}
		}
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	return st
}

// podPhase follows Kubernetes' rules: Pending until the init containers
// are done and every container has started; Running while one runs or
// will run again; Succeeded or Failed once none will. A terminal pod
// (stopped for good) is Succeeded only if all its containers succeeded.
func podPhase(pod *corev1.Pod, inits, containers []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	phase := phaseOf(pod, inits, containers, terminal)
	if terminal && phase != corev1.PodSucceeded {
		return corev1.PodFailed
	}
	return phase
}

func phaseOf(pod *corev1.Pod, inits, containers []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for i, st := range inits {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			continue
		}
		switch {
		case st.State.Running != nil:
			pendingInit++
		case st.State.Terminated != nil:
			if st.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			if st.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	var unknown, running, waitingCount, stopped, succeeded int
	for _, st := range containers {
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			stopped++
		case st.State.Waiting != nil:
			waitingCount++
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0:
		return corev1.PodPending
	case waitingCount > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// conditions computes the kubelet's conditions, keeping others' and the
// transition time of those whose status did not change.
func (in statusInput) conditions(pod *corev1.Pod, s *corev1.PodStatus, old []corev1.PodCondition) []corev1.PodCondition {
	byType := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range old {
		byType[c.Type] = c
	}
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		status := corev1.ConditionFalse
		if ok {
			status, reason, msg = corev1.ConditionTrue, "", ""
		}
		c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metaTime(in.Now),
			ObservedGeneration: pod.Generation}
		if prev, found := byType[t]; found && prev.Status == status {
			c.LastTransitionTime = prev.LastTransitionTime
			c.LastProbeTime = prev.LastProbeTime
		}
		return c
	}
	var out []corev1.PodCondition
	out = append(out, cond(corev1.PodReadyToStartContainers, in.SandboxReady, "", ""))

	var notInit []string
	for i, st := range s.InitContainerStatuses {
		c := &pod.Spec.InitContainers[i]
		done := (st.State.Terminated != nil && st.State.Terminated.ExitCode == 0) || (isSidecar(c) && st.Started != nil && *st.Started)
		if !done {
			notInit = append(notInit, c.Name)
		}
	}
	initialized := in.Initialized || len(notInit) == 0
	out = append(out, cond(corev1.PodInitialized, initialized, reasonContainersNotInit, listMessage("containers with incomplete status", notInit)))

	var unready []string
	for i, st := range s.InitContainerStatuses {
		if isSidecar(&pod.Spec.InitContainers[i]) && !st.Ready {
			unready = append(unready, st.Name)
		}
	}
	for _, st := range s.ContainerStatuses {
		if !st.Ready {
			unready = append(unready, st.Name)
		}
	}
	reason := reasonContainersNotReady
	if s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed {
		reason = reasonPodCompleted
	}
	containersReady := len(unready) == 0 && s.Phase == corev1.PodRunning
	msg := listMessage("containers with unready status", unready)
	if reason == reasonPodCompleted {
		msg = ""
	}
	out = append(out, cond(corev1.ContainersReady, containersReady, reason, msg))

	readyReason, readyMsg := reason, msg
	gatesOK := true
	if containersReady {
		for _, g := range pod.Spec.ReadinessGates {
			c, found := byType[g.ConditionType]
			if !found || c.Status != corev1.ConditionTrue {
				gatesOK = false
				readyReason = reasonReadinessGatesNotOK
				if !found {
					readyMsg = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
				} else {
					readyMsg = fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, c.Status)
				}
				break
			}
		}
	}
	out = append(out, cond(corev1.PodReady, containersReady && gatesOK, readyReason, readyMsg))

	scheduled, found := byType[corev1.PodScheduled]
	if !found {
		scheduled = cond(corev1.PodScheduled, true, "", "")
	}
	out = append(out, scheduled)
	for _, c := range old {
		if !isKubeletCondition(c.Type) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return conditionRank(out[a].Type) < conditionRank(out[b].Type) })
	return out
}

// isKubeletCondition reports whether the kubelet owns a pod condition;
// others' conditions are kept as they are.
func isKubeletCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
		return true
	}
	return false
}

// conditionRank orders conditions as kubectl shows them from a kubelet.
func conditionRank(t corev1.PodConditionType) int {
	for i, k := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		if k == t {
			return i
		}
	}
	return 100
}

func listMessage(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: [%s]", what, strings.Join(names, " "))
}
