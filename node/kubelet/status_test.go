package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func condStatus(s corev1.PodStatus, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

func TestBuildStatus(t *testing.T) {
	now := epoch.Add(time.Hour)
	type check func(t *testing.T, s corev1.PodStatus)
	phase := func(p corev1.PodPhase) check {
		return func(t *testing.T, s corev1.PodStatus) {
			if s.Phase != p {
				t.Errorf("phase %s, want %s", s.Phase, p)
			}
		}
	}
	cond := func(ct corev1.PodConditionType, want corev1.ConditionStatus, reason, msg string) check {
		return func(t *testing.T, s corev1.PodStatus) {
			c, ok := condStatus(s, ct)
			if !ok || c.Status != want || c.Reason != reason || c.Message != msg {
				t.Errorf("%s = %+v, want %s %q %q", ct, c, want, reason, msg)
			}
		}
	}
	waitingReason := func(name, reason string) check {
		return func(t *testing.T, s corev1.PodStatus) {
			for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
				if cs.Name == name {
					if cs.State.Waiting == nil || cs.State.Waiting.Reason != reason {
						t.Errorf("%s state %+v, want waiting %s", name, cs.State, reason)
					}
					return
				}
			}
			t.Errorf("no status for %s", name)
		}
	}
	container := func(name string, fn func(t *testing.T, cs corev1.ContainerStatus)) check {
		return func(t *testing.T, s corev1.PodStatus) {
			for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
				if cs.Name == name {
					fn(t, cs)
					return
				}
			}
			t.Errorf("no status for %s", name)
		}
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		views    map[string]containerView
		waiting  map[string]waiting
		unready  string
		sandbox  bool
		init     bool
		terminal bool
		checks   []check
	}{
		{
			name: "nothing started yet", pod: testPod("p").Init("i").Container("a").Build(),
			checks: []check{phase(corev1.PodPending), waitingReason("i", reasonContainerCreating), waitingReason("a", reasonPodInitializing),
				cond(corev1.PodInitialized, corev1.ConditionFalse, reasonContainersNotInit, "containers with incomplete status: [i]"),
				cond(corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", ""),
				cond(corev1.PodScheduled, corev1.ConditionTrue, "", "")},
		},
		{
			name: "an ephemeral container is reported apart, never ready", pod: testPod("p").Container("a").Ephemeral("debug", "a").Ephemeral("later", "").Build(),
			sandbox: true, init: true,
			views: views("a", running("a1", 0), "debug", running("d1", 0)),
			checks: []check{phase(corev1.PodRunning), cond(corev1.PodReady, corev1.ConditionTrue, "", ""),
				func(t *testing.T, s corev1.PodStatus) {
					if len(s.ContainerStatuses) != 1 || len(s.EphemeralContainerStatuses) != 2 {
						t.Fatalf("statuses %+v, ephemeral %+v", s.ContainerStatuses, s.EphemeralContainerStatuses)
					}
					d, l := s.EphemeralContainerStatuses[0], s.EphemeralContainerStatuses[1]
					if d.Name != "debug" || d.State.Running == nil || d.Ready || d.ContainerID != "embedded://d1" {
						t.Errorf("debug status %+v", d)
					}
					if l.Name != "later" || l.State.Waiting == nil || l.State.Waiting.Reason != reasonContainerCreating || l.Ready {
						t.Errorf("later status %+v", l)
					}
				}},
		},
		{
			name: "running and ready", pod: testPod("p").Init("i").Container("a", "b").Build(), sandbox: true, init: true,
			views: views("i", exited("i1", 0, 0, time.Second), "a", running("a1", 0), "b", running("b1", 0)),
			checks: []check{phase(corev1.PodRunning), cond(corev1.PodReady, corev1.ConditionTrue, "", ""),
				cond(corev1.ContainersReady, corev1.ConditionTrue, "", ""), cond(corev1.PodInitialized, corev1.ConditionTrue, "", ""),
				cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", ""),
				container("i", func(t *testing.T, cs corev1.ContainerStatus) {
					if !cs.Ready || cs.State.Terminated == nil || cs.State.Terminated.Reason != reasonCompleted {
						t.Errorf("init status %+v", cs)
					}
				}),
				container("a", func(t *testing.T, cs corev1.ContainerStatus) {
					if !cs.Ready || !*cs.Started || cs.ContainerID != "embedded://a1" || cs.ImageID != "sha256:abc" || cs.Image != "img" {
						t.Errorf("status %+v", cs)
					}
				})},
		},
		{
			name: "one container unready", pod: testPod("p").Container("a", "b").Build(), sandbox: true, init: true, unready: "b",
			views: views("a", running("a1", 0), "b", running("b1", 0)),
			checks: []check{phase(corev1.PodRunning),
				cond(corev1.ContainersReady, corev1.ConditionFalse, reasonContainersNotReady, "containers with unready status: [b]"),
				cond(corev1.PodReady, corev1.ConditionFalse, reasonContainersNotReady, "containers with unready status: [b]")},
		},
		{
			name: "crash loop", pod: testPod("p").Container("a").Build(), sandbox: true, init: true,
			views:   views("a", containerView{Latest: exited("a3", 3, 1, 5*time.Second), Previous: exited("a2", 2, 1, 0)}),
			waiting: map[string]waiting{"a": {Reason: reasonCrashLoopBackOff, Message: "back-off 40s"}},
			checks: []check{phase(corev1.PodRunning), waitingReason("a", reasonCrashLoopBackOff),
				container("a", func(t *testing.T, cs corev1.ContainerStatus) {
					last := cs.LastTerminationState.Terminated
					if cs.RestartCount != 3 || last == nil || last.ExitCode != 1 || last.Reason != reasonError || last.ContainerID != "embedded://a3" {
						t.Errorf("status %+v", cs)
					}
				})},
		},
		{
			name: "restarted and running shows the last run", pod: testPod("p").Container("a").Build(), sandbox: true, init: true,
			views: views("a", containerView{Latest: running("a2", 1), Previous: &instance{ID: "a1", State: stateExited, ExitCode: 137, Reason: "OOMKilled"}}),
			checks: []check{container("a", func(t *testing.T, cs corev1.ContainerStatus) {
				last := cs.LastTerminationState.Terminated
				if cs.State.Running == nil || cs.RestartCount != 1 || last == nil || last.Reason != "OOMKilled" || last.ExitCode != 137 {
					t.Errorf("status %+v", cs)
				}
			})},
		},
		{
			name: "succeeded", pod: testPod("p").Container("a").Restart(corev1.RestartPolicyNever).Build(), init: true, terminal: true,
			views: views("a", exited("a1", 0, 0, time.Second)),
			checks: []check{phase(corev1.PodSucceeded), cond(corev1.PodReady, corev1.ConditionFalse, reasonPodCompleted, ""),
				cond(corev1.ContainersReady, corev1.ConditionFalse, reasonPodCompleted, "")},
		},
		{
			name: "failed", pod: testPod("p").Container("a", "b").Restart(corev1.RestartPolicyNever).Build(), init: true,
			views:  views("a", exited("a1", 0, 0, time.Second), "b", exited("b1", 0, 3, time.Second)),
			checks: []check{phase(corev1.PodFailed)},
		},
		{
			name: "OnFailure restarting", pod: testPod("p").Container("a").Restart(corev1.RestartPolicyOnFailure).Build(), init: true,
			views:   views("a", exited("a1", 0, 3, time.Second)),
			waiting: map[string]waiting{"a": {Reason: reasonCrashLoopBackOff}},
			checks:  []check{phase(corev1.PodRunning)},
		},
		{
			name: "deleted and stopped is failed", pod: testPod("p").Container("a").Build(), init: true, terminal: true,
			views: views("a", exited("a1", 0, 143, time.Second)),
			checks: []check{phase(corev1.PodFailed), container("a", func(t *testing.T, cs corev1.ContainerStatus) {
				if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 143 {
					t.Errorf("state %+v", cs.State)
				}
			})},
		},
		{
			name: "image pull error", pod: testPod("p").Container("a").Build(), sandbox: true, init: true,
			waiting: map[string]waiting{"a": {Reason: reasonImagePullBackOff, Message: "Back-off pulling image"}},
			checks:  []check{phase(corev1.PodPending), waitingReason("a", reasonImagePullBackOff)},
		},
		{
			name: "a missing readiness gate", pod: testPod("p").Container("a").Gate("example.com/lb").Build(), sandbox: true, init: true,
			views: views("a", running("a1", 0)),
			checks: []check{cond(corev1.ContainersReady, corev1.ConditionTrue, "", ""),
				cond(corev1.PodReady, corev1.ConditionFalse, reasonReadinessGatesNotOK, `corresponding condition of pod readiness gate "example.com/lb" does not exist.`)},
		},
		{
			name: "a true readiness gate", pod: testPod("p").Container("a").Gate("example.com/lb").Condition("example.com/lb", corev1.ConditionTrue, epoch).Build(),
			sandbox: true, init: true, views: views("a", running("a1", 0)),
			checks: []check{cond(corev1.PodReady, corev1.ConditionTrue, "", ""), cond("example.com/lb", corev1.ConditionTrue, "", "")},
		},
		{
			name: "unchanged conditions keep their time", pod: testPod("p").Container("a").Condition(corev1.PodReady, corev1.ConditionTrue, epoch).
				Condition(corev1.ContainersReady, corev1.ConditionFalse, epoch).Build(),
			sandbox: true, init: true, views: views("a", running("a1", 0)),
			checks: []check{func(t *testing.T, s corev1.PodStatus) {
				ready, _ := condStatus(s, corev1.PodReady)
				cr, _ := condStatus(s, corev1.ContainersReady)
				if !ready.LastTransitionTime.Time.Equal(epoch) || !cr.LastTransitionTime.Time.Equal(now) {
					t.Errorf("Ready at %v, ContainersReady at %v", ready.LastTransitionTime, cr.LastTransitionTime)
				}
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := statusInput{
				Now: now, RuntimeName: "embedded", HostIPs: []string{"10.0.0.11"}, PodIPs: []string{"10.244.1.2"},
				SandboxReady: tt.sandbox, Views: tt.views, Waiting: tt.waiting, Initialized: tt.init, Terminal: tt.terminal,
				Ready:   func(c *corev1.Container, id string) bool { return c.Name != tt.unready },
				Started: func(*corev1.Container, string) bool { return true },
			}
			s := buildStatus(tt.pod, in)
			if s.HostIP != "10.0.0.11" || s.PodIP != "10.244.1.2" || len(s.PodIPs) != 1 || s.StartTime == nil {
				t.Errorf("addresses or start time: %+v", s)
			}
			for _, c := range tt.checks {
				c(t, s)
			}
		})
	}
}

func TestBuildStatusIsStable(t *testing.T) {
	pod := testPod("p").Container("a").Build()
	in := statusInput{Now: epoch.Add(1500 * time.Millisecond), RuntimeName: "embedded", SandboxReady: true, Initialized: true,
		Views: views("a", running("a1", 0))}
	first := buildStatus(pod, in)
	pod.Status = first
	in.Now = in.Now.Add(time.Minute)
	second := buildStatus(pod, in)
	if !statusEqual(first, second) {
		t.Errorf("a second computation differs:\n%+v\n%+v", first, second)
	}
}
