package printers

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podBuilder keeps pod test cases short.
type podBuilder struct{ pod corev1.Pod }

// testPod is a pod of regular containers named names ("app" if none).
func testPod(names ...string) *podBuilder {
	if len(names) == 0 {
		names = []string{"app"}
	}
	b := &podBuilder{pod: corev1.Pod{ObjectMeta: objMeta("web")}}
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: n + ":1"})
	}
	return b
}

func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }
func (b *podBuilder) reason(r string) *podBuilder         { b.pod.Status.Reason = r; return b }

func (b *podBuilder) inits(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n})
	}
	return b
}

func (b *podBuilder) sidecar(name string) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: &always})
	return b
}

func (b *podBuilder) statuses(s ...corev1.ContainerStatus) *podBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, s...)
	return b
}

func (b *podBuilder) initStatuses(s ...corev1.ContainerStatus) *podBuilder {
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, s...)
	return b
}

func (b *podBuilder) condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return b
}

func (b *podBuilder) deleting() *podBuilder {
	b.pod.DeletionTimestamp = agoPtr(time.Second)
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return &b.pod }

// Container status builders.

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Started: ptr(false),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, exitCode, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Started: ptr(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}}
}

// restarted records n restarts, the last one finishing d ago.
func restarted(s corev1.ContainerStatus, n int32, d time.Duration) corev1.ContainerStatus {
	s.RestartCount = n
	if d > 0 {
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(d)}
	}
	return s
}

func TestPodReadyStatusRestarts(t *testing.T) {
	tests := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
	}{
		{"running and ready",
			testPod().phase(corev1.PodRunning).statuses(running("app", true)).obj(),
			"1/1", "Running", "0"},
		{"running but not ready",
			testPod().phase(corev1.PodRunning).statuses(running("app", false)).obj(),
			"0/1", "Running", "0"},
		{"pending before any status",
			testPod("a", "b").phase(corev1.PodPending).obj(),
			"0/2", "Pending", "0"},
		{"container creating",
			testPod().phase(corev1.PodPending).statuses(waiting("app", "ContainerCreating")).obj(),
			"0/1", "ContainerCreating", "0"},
		{"crash loop shows when it last restarted",
			testPod().phase(corev1.PodRunning).statuses(restarted(waiting("app", "CrashLoopBackOff"), 4, 5*time.Minute)).obj(),
			"0/1", "CrashLoopBackOff", "4 (5m ago)"},
		{"restarts with no recorded time are a bare count",
			testPod().phase(corev1.PodRunning).statuses(restarted(running("app", true), 2, 0)).obj(),
			"1/1", "Running", "2"},
		{"restarts add up and the latest time wins",
			testPod("a", "b").phase(corev1.PodRunning).statuses(
				restarted(running("a", true), 1, time.Hour), restarted(running("b", true), 2, 90*time.Second)).obj(),
			"2/2", "Running", "3 (90s ago)"},
		{"first container's state wins",
			testPod("a", "b").phase(corev1.PodPending).statuses(
				waiting("a", "ImagePullBackOff"), waiting("b", "CrashLoopBackOff")).obj(),
			"0/2", "ImagePullBackOff", "0"},
		{"terminated with a reason",
			testPod().phase(corev1.PodRunning).statuses(terminated("app", "OOMKilled", 137, 0)).obj(),
			"0/1", "OOMKilled", "0"},
		{"exit code when the runtime gave no reason",
			testPod().phase(corev1.PodRunning).statuses(terminated("app", "", 3, 0)).obj(),
			"0/1", "ExitCode:3", "0"},
		{"signal when the runtime gave no reason",
			testPod().phase(corev1.PodRunning).statuses(terminated("app", "", 0, 9)).obj(),
			"0/1", "Signal:9", "0"},
		{"completed",
			testPod().phase(corev1.PodSucceeded).statuses(terminated("app", "Completed", 0, 0)).obj(),
			"0/1", "Completed", "0"},
		{"completed container beside a running one in a ready pod",
			testPod("a", "b").phase(corev1.PodRunning).condition(corev1.PodReady, corev1.ConditionTrue, "").
				statuses(terminated("a", "Completed", 0, 0), running("b", true)).obj(),
			"1/2", "Running", "0"},
		{"completed container beside a running one in an unready pod",
			testPod("a", "b").phase(corev1.PodRunning).condition(corev1.PodReady, corev1.ConditionFalse, "").
				statuses(terminated("a", "Completed", 0, 0), running("b", true)).obj(),
			"1/2", "NotReady", "0"},
		{"evicted",
			testPod().phase(corev1.PodFailed).reason("Evicted").obj(),
			"0/1", "Evicted", "0"},
		{"scheduling gated",
			testPod().phase(corev1.PodPending).condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated).obj(),
			"0/1", "SchedulingGated", "0"},
		{"first init container running",
			testPod().inits("i1", "i2").phase(corev1.PodPending).
				initStatuses(running("i1", false), waiting("i2", "PodInitializing")).
				statuses(waiting("app", "PodInitializing")).obj(),
			"0/1", "Init:0/2", "0"},
		{"second init container about to start",
			testPod().inits("i1", "i2").phase(corev1.PodPending).
				initStatuses(terminated("i1", "Completed", 0, 0), waiting("i2", "PodInitializing")).
				statuses(waiting("app", "PodInitializing")).obj(),
			"0/1", "Init:1/2", "0"},
		{"init container crash loop counts its restarts",
			testPod().inits("i1").phase(corev1.PodPending).
				initStatuses(restarted(waiting("i1", "CrashLoopBackOff"), 3, 2*time.Minute)).
				statuses(waiting("app", "PodInitializing")).obj(),
			"0/1", "Init:CrashLoopBackOff", "3 (2m ago)"},
		{"init container failed with a reason",
			testPod().inits("i1").phase(corev1.PodPending).initStatuses(terminated("i1", "Error", 1, 0)).obj(),
			"0/1", "Init:Error", "0"},
		{"init container failed with an exit code",
			testPod().inits("i1").phase(corev1.PodPending).initStatuses(terminated("i1", "", 2, 0)).obj(),
			"0/1", "Init:ExitCode:2", "0"},
		{"init container killed by a signal",
			testPod().inits("i1").phase(corev1.PodPending).initStatuses(terminated("i1", "", 143, 15)).obj(),
			"0/1", "Init:Signal:15", "0"},
		{"init container restarts stop counting once initialized",
			testPod().inits("i1").phase(corev1.PodRunning).
				initStatuses(restarted(terminated("i1", "Completed", 0, 0), 2, time.Hour)).
				statuses(running("app", true)).obj(),
			"1/1", "Running", "0"},
		{"sidecar counts in READY and RESTARTS",
			testPod().sidecar("proxy").phase(corev1.PodRunning).condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				initStatuses(restarted(running("proxy", true), 1, 3*time.Minute)).
				statuses(running("app", true)).obj(),
			"2/2", "Running", "1 (3m ago)"},
		{"sidecar not started yet holds initialization",
			testPod().sidecar("proxy").phase(corev1.PodPending).
				initStatuses(waiting("proxy", "")).
				statuses(waiting("app", "PodInitializing")).obj(),
			"0/2", "Init:0/1", "0"},
		{"deleted pod is terminating",
			testPod().phase(corev1.PodRunning).statuses(running("app", true)).deleting().obj(),
			"1/1", "Terminating", "0"},
		{"deleted pod that finished keeps its status",
			testPod().phase(corev1.PodSucceeded).statuses(terminated("app", "Completed", 0, 0)).deleting().obj(),
			"0/1", "Completed", "0"},
		{"deleted pod of a lost node is unknown",
			testPod().phase(corev1.PodRunning).reason("NodeLost").statuses(running("app", true)).deleting().obj(),
			"1/1", "Unknown", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wideRow(t, tt.pod)
			got := []any{c[1], c[2], c[3]}
			want := []any{tt.ready, tt.status, tt.restarts}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("READY, STATUS, RESTARTS = %q, want %q", got, want)
			}
		})
	}
}

func TestPodColumns(t *testing.T) {
	checkColumns(t, testPod().obj(),
		[]string{"Name", "Ready", "Status", "Restarts", "Age"},
		[]string{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"})
}

func TestPodWideCells(t *testing.T) {
	withGates := testPod().phase(corev1.PodRunning).
		condition("example.com/lb", corev1.ConditionTrue, "").
		condition("example.com/dns", corev1.ConditionFalse, "").obj()
	withGates.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	withGates.Spec.NodeName = "n1"
	withGates.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}

	legacyIP := testPod().phase(corev1.PodPending).obj()
	legacyIP.Status.PodIP = "10.0.0.6"
	legacyIP.Status.NominatedNodeName = "n2"

	tests := []struct {
		name string
		pod  *corev1.Pod
		want []any
	}{
		{"scheduled with gates", withGates, []any{"10.0.0.5", "n1", "<none>", "1/2"}},
		{"podIP only, nominated", legacyIP, []any{"10.0.0.6", "<none>", "n2", "<none>"}},
		{"nothing yet", testPod().obj(), []any{"<none>", "<none>", "<none>", "<none>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wideRow(t, tt.pod)
			checkCells(t, c[5:], tt.want)
			if c[0] != "web" || c[4] != "60m" {
				t.Errorf("NAME, AGE = %v, %v, want web, 60m", c[0], c[4])
			}
		})
	}
}

func TestPodRowConditionsMarkFinishedPods(t *testing.T) {
	tests := []struct {
		phase  corev1.PodPhase
		reason string // of the Completed row condition, "" for none
	}{
		{corev1.PodRunning, ""},
		{corev1.PodSucceeded, "Succeeded"},
		{corev1.PodFailed, "Failed"},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			row := render(t, testPod().phase(tt.phase).obj(), true).Rows[0]
			if tt.reason == "" {
				if len(row.Conditions) != 0 {
					t.Errorf("conditions = %v, want none", row.Conditions)
				}
				return
			}
			if len(row.Conditions) != 1 || row.Conditions[0].Type != metav1.RowCompleted ||
				row.Conditions[0].Status != metav1.ConditionTrue || row.Conditions[0].Reason != tt.reason {
				t.Errorf("conditions = %+v, want Completed=True with reason %s", row.Conditions, tt.reason)
			}
		})
	}
}
