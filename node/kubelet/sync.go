package kubelet

import (
	"context"
	"time"

	"cairn/node/kubelet/downward"
	"cairn/node/kubelet/prober"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Delays before a failed step of a sync is tried again.
const (
	// A mount is retried soon at first, since what it waits for (a
	// service account, the namespace's kube-root-ca.crt) is usually being
	// created at that moment, then every retryMount.
	firstRetryMount = 200 * time.Millisecond
	retryMount      = 2 * time.Second
	retrySandbox    = 5 * time.Second
	// failedMountEvery repeats a FailedMount event that did not change.
	failedMountEvery = 30 * time.Second
)

// mountRetryDelay is the wait after the nth failed mount in a row:
// doubling from firstRetryMount up to retryMount.
func mountRetryDelay(n int) time.Duration {
	d := firstRetryMount
	for i := 1; i < n && d < retryMount; i++ {
		d *= 2
	}
	return min(d, retryMount)
}

// syncPod converges one pod and reports whether its worker is done with
// it, or when to sync again.
func (k *Kubelet) syncPod(ctx context.Context, w *podWorker) (done bool, requeue time.Duration) {
	pod, gone, _ := w.snapshot()
	if pod == nil {
		return true, 0
	}
	if gone || pod.DeletionTimestamp != nil {
		return k.terminate(ctx, w, pod, gone)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Ended for good: nothing may run; its containers stay for logs
		// until the pod is deleted.
		if err := k.stopPod(ctx, pod); err != nil {
			k.log.Warn("stopping an ended pod failed", "pod", podDesc(pod), "err", err)
			return false, retrySandbox
		}
		return true, 0
	}
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		k.log.Warn("reading the pod's runtime state failed", "pod", podDesc(pod), "err", err)
		return false, 0
	}
	if !w.admitted && len(rs.Sandboxes) == 0 && len(rs.Instances) == 0 {
		// Not started on this node yet: admit it first, once.
		if reason, msg, ok := k.admit(pod); !ok {
			return k.rejectPod(ctx, w, pod, reason, msg)
		}
	}
	w.admitted = true
	if !w.adopted {
		w.adopted = true
		if n := len(rs.running()); n > 0 {
			k.log.Info("adopting running containers", "pod", podDesc(pod), "containers", n)
		}
	}
	k.syncProbes(pod, rs)
	p := k.plan(pod, rs)
	if p.Terminal {
		return k.finish(ctx, w, pod, rs, p)
	}
	refreshed, err := k.ensureVolumes(ctx, w, pod)
	if err != nil {
		k.writePodStatus(ctx, w, pod, rs, p, nil, false)
		w.mountFailures++
		return false, mountRetryDelay(w.mountFailures)
	}
	w.mountFailures = 0
	if refreshed {
		if msg, over := k.volumes.OverLimit(pod); over {
			k.event(pod, nil, corev1.EventTypeWarning, eventEvicted, "%s", msg)
			return k.failPod(ctx, w, pod, rs, p, reasonEvicted, msg, true)
		}
	}
	if pastDeadline(pod, time.Now()) {
		msg := "Pod was active on the node longer than the specified deadline"
		k.event(pod, nil, corev1.EventTypeNormal, reasonDeadlineExceeded, "%s", msg)
		return k.failPod(ctx, w, pod, rs, p, reasonDeadlineExceeded, msg, false)
	}
	created, err := k.ensureSandbox(ctx, pod, rs)
	if err != nil {
		k.event(pod, nil, corev1.EventTypeWarning, eventFailedSandbox, "Failed to create pod sandbox: %v", err)
		k.writePodStatus(ctx, w, pod, rs, p, nil, false)
		return false, retrySandbox
	}
	if created {
		if rs, err = k.podRuntime(ctx, pod.UID); err != nil || !rs.sandboxReady() {
			return false, 0
		}
		k.syncProbes(pod, rs)
		p = k.plan(pod, rs)
	}
	sb := k.sandboxConfig(pod, rs.Sandbox.Metadata.GetAttempt())
	acted := k.act(ctx, w, pod, rs, p, sb)
	if len(acted) > 0 {
		if fresh, err := k.podRuntime(ctx, pod.UID); err == nil {
			rs = fresh
			k.syncProbes(pod, rs)
			k.gcInstances(ctx, rs)
		}
	}
	k.writePodStatus(ctx, w, pod, rs, p, acted, false)
	return false, p.Requeue
}

// plan decides the sync from the runtime's state and the probes.
func (k *Kubelet) plan(pod *corev1.Pod, rs *podRuntime) plan {
	return planPod(planInput{
		Pod: pod, Views: rs.Views, Backoff: k.crashBackoff, Now: time.Now(),
		Unhealthy: func(c *corev1.Container, id string) (prober.Kind, bool) { return k.probes.Unhealthy(pod.UID, c, id) },
		Started:   func(c *corev1.Container, id string) bool { return k.probes.Started(pod.UID, c, id) },
	})
}

// act carries out a plan and returns the containers it tried to start.
func (k *Kubelet) act(ctx context.Context, w *podWorker, pod *corev1.Pod, rs *podRuntime, p plan, sb *runtimeapi.PodSandboxConfig) map[string]bool {
	acted := map[string]bool{}
	podIP := first(k.podIPs(pod, rs))
	for _, id := range p.Remove {
		k.removeInstance(ctx, rs, id)
		acted[rs.containerName(id)] = true
	}
	for _, kr := range p.Kill {
		if err := k.killContainer(ctx, pod, kr.Container, kr.ID, podIP, gracePeriodOf(pod, kr.Probe), kr.Message, true); err != nil {
			k.log.Warn("killing an unhealthy container failed", "pod", podDesc(pod), "container", kr.Container.Name, "err", err)
		}
		acted[kr.Container.Name] = true
	}
	for _, c := range p.BackOff {
		k.event(pod, c, corev1.EventTypeWarning, eventBackOff, "Back-off restarting failed container %s in pod %s", c.Name, podDesc(pod))
	}
	for _, r := range p.Start {
		if r.Restart {
			k.crashBackoff.Next(backoffKey(pod.UID, r.Container.Name), r.RanFor)
		}
		if wt := k.startContainer(ctx, w, pod, rs, r, sb); wt != nil {
			w.waiting[r.Container.Name] = *wt
		} else {
			delete(w.waiting, r.Container.Name)
		}
		acted[r.Container.Name] = true
	}
	return acted
}

// ensureVolumes sets the pod's volumes up once, then refreshes them
// every SyncFrequency; it reports whether it did now. A failed refresh
// keeps the old content.
func (k *Kubelet) ensureVolumes(ctx context.Context, w *podWorker, pod *corev1.Pod) (bool, error) {
	if w.volumes != nil && time.Since(w.mountAt) < k.cfg.SyncFrequency {
		return false, nil
	}
	vols, err := k.volumes.Setup(ctx, pod, downward.PodIPs{HostIPs: []string{k.cfg.NodeIP.String()}}, k.allocatable())
	if err != nil {
		msg := err.Error()
		if msg != w.mountError || time.Since(w.mountAt) >= failedMountEvery {
			k.event(pod, nil, corev1.EventTypeWarning, eventFailedMount, "%s", msg)
			w.mountError, w.mountAt = msg, time.Now()
		}
		if w.volumes != nil {
			return false, nil
		}
		return false, err
	}
	w.volumes, w.mountAt, w.mountError = vols, time.Now(), ""
	return true, nil
}

// syncProbes tells the prober which instances run.
func (k *Kubelet) syncProbes(pod *corev1.Pod, rs *podRuntime) {
	states := map[string]prober.ContainerState{}
	for name, v := range rs.Views {
		l := v.Latest
		states[name] = prober.ContainerState{ID: l.ID, Running: l.State == stateRunning, StartedAt: l.StartedAt, WasReady: wasReady(pod, name, k.runtimeName+"://"+l.ID)}
	}
	k.probes.Sync(pod, first(k.podIPs(pod, rs)), states)
}

// podIPs are the pod's addresses: its sandbox's, or the node's for a
// pod on the host's network.
func (k *Kubelet) podIPs(pod *corev1.Pod, rs *podRuntime) []string {
	if pod.Spec.HostNetwork {
		return []string{k.cfg.NodeIP.String()}
	}
	return rs.podIPs()
}

// wasReady reports whether the pod's status says the instance was
// ready, for instances adopted after a restart of the agent.
func wasReady(pod *corev1.Pod, name, containerID string) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.ContainerID == containerID && cs.Ready
		}
	}
	return false
}

// writePodStatus computes and stores the pod's status. Waiting reasons
// the worker remembers (image pull errors...) apply to the containers
// it tried to start, or that have no instance yet.
func (k *Kubelet) writePodStatus(ctx context.Context, w *podWorker, pod *corev1.Pod, rs *podRuntime, p plan, acted map[string]bool, terminal bool) {
	k.storeStatus(ctx, w, pod, k.podStatus(w, pod, rs, p, acted, terminal))
}

// podStatus computes the pod's status.
func (k *Kubelet) podStatus(w *podWorker, pod *corev1.Pod, rs *podRuntime, p plan, acted map[string]bool, terminal bool) corev1.PodStatus {
	wait := map[string]waiting{}
	for name, wt := range w.waiting {
		if acted[name] || rs.Views[name].Latest == nil {
			wait[name] = wt
		}
	}
	for name, wt := range p.Waiting {
		wait[name] = wt
	}
	podIPs := k.podIPs(pod, rs)
	for id := range w.messages {
		if rs.containerName(id) == "" {
			delete(w.messages, id)
		}
	}
	in := statusInput{
		Now: time.Now(), RuntimeName: k.runtimeName, HostIPs: []string{k.cfg.NodeIP.String()}, PodIPs: podIPs,
		SandboxReady: rs.sandboxReady() && !terminal, Views: rs.Views, Waiting: wait,
		Ready:              func(c *corev1.Container, id string) bool { return k.probes.Ready(pod.UID, c, id) },
		Started:            func(c *corev1.Container, id string) bool { return k.probes.Started(pod.UID, c, id) },
		Initialized:        p.Initialized,
		Terminal:           terminal,
		TerminationMessage: k.terminationMessage(w, pod),
	}
	return buildStatus(pod, in)
}

// storeStatus writes a status computed from pod.
func (k *Kubelet) storeStatus(ctx context.Context, w *podWorker, pod *corev1.Pod, status corev1.PodStatus) {
	out, err := k.writeStatus(ctx, pod, status)
	if err != nil {
		k.log.Warn("writing the pod status failed", "pod", podDesc(pod), "err", err)
		return
	}
	// Until the informer brings it, sync against what was stored.
	w.mu.Lock()
	if w.pod != nil && w.pod.ResourceVersion == pod.ResourceVersion {
		w.pod = out
	}
	w.mu.Unlock()
}

// pastDeadline reports whether the pod ran past its
// activeDeadlineSeconds, counted from its start on the node.
func pastDeadline(pod *corev1.Pod, now time.Time) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	start := pod.Status.StartTime
	return d != nil && start != nil && now.Sub(start.Time) >= time.Duration(*d)*time.Second
}

// failPod stops a pod the kubelet gives up on and fails it with reason
// and msg: one that used more than it may (an emptyDir over its
// sizeLimit, Evicted, a disruption as the eviction manager reports it)
// or ran past its activeDeadlineSeconds. The pod object stays for its
// owner to see.
func (k *Kubelet) failPod(ctx context.Context, w *podWorker, pod *corev1.Pod, rs *podRuntime, p plan, reason, msg string, disruption bool) (bool, time.Duration) {
	if err := k.killAll(ctx, pod, rs, gracePeriodOf(pod, nil)); err != nil {
		return false, retrySandbox
	}
	if err := k.stopSandboxes(ctx, rs); err != nil {
		return false, retrySandbox
	}
	if fresh, err := k.podRuntime(ctx, pod.UID); err == nil {
		rs = fresh
	}
	status := k.podStatus(w, pod, rs, p, nil, true)
	status.Phase, status.Reason, status.Message = corev1.PodFailed, reason, msg
	if disruption {
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: msg, LastTransitionTime: metaTime(time.Now()), ObservedGeneration: pod.Generation})
	}
	k.storeStatus(ctx, w, pod, status)
	k.probes.RemovePod(pod.UID)
	return true, 0
}

// rejectPod fails a pod the kubelet does not admit, before anything of
// it runs, as Kubernetes' kubelet does.
func (k *Kubelet) rejectPod(ctx context.Context, w *podWorker, pod *corev1.Pod, reason, msg string) (bool, time.Duration) {
	msg = "Pod was rejected: " + msg
	k.event(pod, nil, corev1.EventTypeWarning, reason, "%s", msg)
	status := corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: msg, QOSClass: pod.Status.QOSClass,
		Conditions: pod.Status.Conditions, ObservedGeneration: pod.Generation}
	k.storeStatus(ctx, w, pod, status)
	return true, 0
}

// finish stops a pod that ended (its containers exited for good under
// its restart policy, or an init container failed under Never) and
// stores its final status.
func (k *Kubelet) finish(ctx context.Context, w *podWorker, pod *corev1.Pod, rs *podRuntime, p plan) (bool, time.Duration) {
	if err := k.killAll(ctx, pod, rs, gracePeriodOf(pod, nil)); err != nil {
		k.log.Warn("stopping an ended pod failed", "pod", podDesc(pod), "err", err)
		return false, retrySandbox
	}
	if err := k.stopSandboxes(ctx, rs); err != nil {
		k.log.Warn("stopping an ended pod's sandbox failed", "pod", podDesc(pod), "err", err)
		return false, retrySandbox
	}
	if fresh, err := k.podRuntime(ctx, pod.UID); err == nil {
		rs = fresh
	}
	k.writePodStatus(ctx, w, pod, rs, p, nil, true)
	k.probes.RemovePod(pod.UID)
	return true, 0
}
