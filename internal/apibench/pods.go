package apibench

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RunLabel marks every pod of one run with the run's ID, so that the pods
// of a run kept with --keep can be told from those of other runs.
const RunLabel = "apibench.cairn.io/run"

// podName names pod i of a run; the zero padding keeps the names of one run
// the same length, as generated names are.
func podName(runID string, i int) string {
	return fmt.Sprintf("apibench-%s-%05d", runID, i)
}

// newPod builds a small but realistic pod: labels, one container with
// requests, limits, a port, an environment variable and a probe, about the
// size of a pod a Deployment stamps out.
func newPod(runID, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"app":    "apibench",
				"tier":   "backend",
				RunLabel: runID,
			},
			Annotations: map[string]string{"apibench.cairn.io/purpose": "API server benchmark"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "bench"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("10m"),
						corev1.ResourceMemory: resource.MustParse("16Mi"),
					},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
					PeriodSeconds: 10,
				},
			}},
		},
	}
}
