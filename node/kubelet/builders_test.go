package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podBuilder keeps the pods of table tests short.
type podBuilder struct{ pod *corev1.Pod }

func testPod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, NodeName: "n1"},
	}}
}

func (b *podBuilder) Container(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: "img"})
	}
	return b
}

func (b *podBuilder) Init(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n, Image: "img"})
	}
	return b
}

func (b *podBuilder) Sidecar(name string) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, Image: "img", RestartPolicy: &always})
	return b
}

// Ephemeral adds an ephemeral container with target as its
// targetContainerName ("" for none).
func (b *podBuilder) Ephemeral(name, target string) *podBuilder {
	b.pod.Spec.EphemeralContainers = append(b.pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "img"}, TargetContainerName: target})
	return b
}

func (b *podBuilder) Restart(p corev1.RestartPolicy) *podBuilder {
	b.pod.Spec.RestartPolicy = p
	return b
}

func (b *podBuilder) Gate(t corev1.PodConditionType) *podBuilder {
	b.pod.Spec.ReadinessGates = append(b.pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	return b
}

func (b *podBuilder) Condition(t corev1.PodConditionType, s corev1.ConditionStatus, at time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)})
	return b
}

func (b *podBuilder) Build() *corev1.Pod { return b.pod }

var epoch = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

func running(id string, restarts int32) *instance {
	return &instance{ID: id, RestartCount: restarts, State: stateRunning, StartedAt: epoch, ImageRef: "sha256:abc"}
}

func exited(id string, restarts, code int32, finished time.Duration) *instance {
	return &instance{ID: id, RestartCount: restarts, State: stateExited, ExitCode: code,
		StartedAt: epoch, FinishedAt: epoch.Add(finished), ImageRef: "sha256:abc"}
}

func views(kv ...any) map[string]containerView {
	out := map[string]containerView{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case *instance:
			out[kv[i].(string)] = containerView{Latest: v}
		case containerView:
			out[kv[i].(string)] = v
		}
	}
	return out
}
