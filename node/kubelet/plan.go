package kubelet

import (
	"fmt"
	"strings"
	"time"

	"cairn/node/kubelet/prober"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Waiting reasons of container statuses, as the kubelet reports them.
const (
	reasonContainerCreating   = "ContainerCreating"
	reasonPodInitializing     = "PodInitializing"
	reasonCrashLoopBackOff    = "CrashLoopBackOff"
	reasonErrImagePull        = "ErrImagePull"
	reasonImagePullBackOff    = "ImagePullBackOff"
	reasonErrImageNeverPull   = "ErrImageNeverPull"
	reasonInvalidImageName    = "InvalidImageName"
	reasonCreateConfigError   = "CreateContainerConfigError"
	reasonCreateContainerErr  = "CreateContainerError"
	reasonRunContainerError   = "RunContainerError"
	reasonPostStartHookError  = "PostStartHookError"
	reasonCompleted           = "Completed"
	reasonError               = "Error"
	reasonContainersNotReady  = "ContainersNotReady"
	reasonContainersNotInit   = "ContainersNotInitialized"
	reasonPodCompleted        = "PodCompleted"
	reasonReadinessGatesNotOK = "ReadinessGatesNotReady"
	reasonEvicted             = "Evicted"
	reasonDeadlineExceeded    = "DeadlineExceeded"
)

// waiting says why a container is not running, for its status.
type waiting struct {
	Reason, Message string
}

// startRequest asks for a new instance of a container.
type startRequest struct {
	Container *corev1.Container
	Init      bool
	// TargetID is the instance of an ephemeral container's target,
	// whose PID namespace it joins; set when the start is carried out.
	TargetID     string
	RestartCount int32
	// Restart is set when the instance replaces one that exited (not a
	// first start nor a never-started one), which counts for the backoff.
	Restart bool
	RanFor  time.Duration
}

// killRequest asks for a running instance to be stopped.
type killRequest struct {
	Container *corev1.Container
	ID        string
	Message   string
	// Probe is the probe that failed, whose terminationGracePeriodSeconds
	// may override the pod's.
	Probe *corev1.Probe
}

// plan is what a sync of a running pod does: it is decided from the
// runtime's state and the probes' results alone, and then carried out.
type plan struct {
	Start []startRequest
	Kill  []killRequest
	// Remove are instances that never started, replaced by a new one.
	Remove []string
	// Waiting holds the CrashLoopBackOff of containers waiting to restart.
	Waiting map[string]waiting
	// BackOff are the containers waiting to restart, for events.
	BackOff []*corev1.Container
	// Initialized is true once the init containers are done.
	Initialized bool
	// Terminal is true when no container runs nor will run again: the
	// pod succeeded or failed.
	Terminal bool
	// Requeue, when set, is when the sync should run again (a backoff
	// ends).
	Requeue time.Duration
}

func (p *plan) requeue(d time.Duration) {
	if p.Requeue == 0 || d < p.Requeue {
		p.Requeue = d
	}
}

// planInput is what a plan is decided from.
type planInput struct {
	Pod   *corev1.Pod
	Views map[string]containerView
	// Unhealthy reports a failed liveness or startup probe of an instance.
	Unhealthy func(c *corev1.Container, id string) (prober.Kind, bool)
	// Started reports whether an instance passed its startup probe.
	Started func(c *corev1.Container, id string) bool
	Backoff *Backoff
	Now     time.Time
}

func backoffKey(uid types.UID, container string) string { return string(uid) + "/" + container }

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// shouldRestart applies a restart policy to an exit code.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// planPod decides a sync: init containers one at a time, each to a
// successful end (sidecars, init containers with restartPolicy Always,
// only to a start), then the containers, each restarted by the pod's
// policy with CrashLoopBackOff, and those failing their liveness or
// startup probe killed.
func planPod(in planInput) plan {
	p := plan{Waiting: map[string]waiting{}}
	pod := in.Pod
	initialized := false
	for _, c := range pod.Spec.Containers {
		if in.Views[c.Name].Latest != nil {
			// Once a container ran, init is over for good, as in Kubernetes.
			initialized = true
		}
	}
	if !initialized {
		initialized = in.planInit(&p)
	}
	p.Initialized = initialized
	if !p.Terminal {
		in.planEphemeral(&p)
	}
	if !initialized || p.Terminal {
		return p
	}
	finished := 0
	for i := range pod.Spec.Containers {
		if in.converge(&p, &pod.Spec.Containers[i], pod.Spec.RestartPolicy, false) {
			finished++
		}
	}
	if finished == len(pod.Spec.Containers) {
		p.Terminal = true
		p.Start, p.Kill, p.Waiting, p.BackOff, p.Requeue = nil, nil, map[string]waiting{}, nil, 0
		return p
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) {
			in.converge(&p, c, corev1.RestartPolicyAlways, true)
		}
	}
	return p
}

// planInit runs the init containers in order; it reports whether they
// are all done.
func (in planInput) planInit(p *plan) bool {
	pod := in.Pod
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l := in.Views[c.Name].Latest
		if isSidecar(c) {
			in.converge(p, c, corev1.RestartPolicyAlways, true)
			if l == nil || l.State != stateRunning || !in.Started(c, l.ID) {
				return false
			}
			continue
		}
		if l != nil && l.State == stateExited {
			if l.ExitCode == 0 {
				continue
			}
			if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				p.Terminal = true
				return false
			}
		}
		// Init containers run again on failure unless the pod's policy
		// is Never.
		in.converge(p, c, corev1.RestartPolicyOnFailure, true)
		return false
	}
	return true
}

// converge decides for one container under policy; it reports whether
// the container finished for good (exited, not to be restarted).
func (in planInput) converge(p *plan, c *corev1.Container, policy corev1.RestartPolicy, init bool) bool {
	l := in.Views[c.Name].Latest
	switch {
	case l == nil:
		p.Start = append(p.Start, startRequest{Container: c, Init: init})
		return false
	case l.State == stateRunning:
		if l.Hash != "" && l.Hash != containerHash(c) {
			// The spec changed (a new image): replace the instance
			// whatever the restart policy, as Kubernetes does.
			p.Kill = append(p.Kill, killRequest{Container: c, ID: l.ID,
				Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
			p.Start = append(p.Start, startRequest{Container: c, Init: init, RestartCount: l.RestartCount + 1})
			return false
		}
		if kind, bad := in.Unhealthy(c, l.ID); bad {
			probe := c.LivenessProbe
			if kind == prober.Startup {
				probe = c.StartupProbe
			}
			p.Kill = append(p.Kill, killRequest{Container: c, ID: l.ID, Probe: probe,
				Message: fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(kind.String()))})
		}
		return false
	case l.State != stateExited:
		// Created but never started (the agent stopped in between):
		// replace it, with the same restart count.
		p.Remove = append(p.Remove, l.ID)
		p.Start = append(p.Start, startRequest{Container: c, Init: init, RestartCount: l.RestartCount})
		return false
	}
	if !shouldRestart(policy, l.ExitCode) {
		return true
	}
	key := backoffKey(in.Pod.UID, c.Name)
	if wait := in.Backoff.Wait(key, l.FinishedAt, l.ranFor(), in.Now); wait > 0 {
		p.Waiting[c.Name] = waiting{Reason: reasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", in.Backoff.Delay(key), c.Name, podDesc(in.Pod))}
		p.BackOff = append(p.BackOff, c)
		p.requeue(wait)
		return false
	}
	p.Start = append(p.Start, startRequest{Container: c, Init: init, RestartCount: l.RestartCount + 1, Restart: true, RanFor: l.ranFor()})
	return false
}

// podDesc names a pod as kubelet messages do: name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
