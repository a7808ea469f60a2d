package main

import (
	"cairn/internal/devcluster"
	"cairn/internal/devcluster/demoapp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels of the benchmark's pods: benchLabel is measureValue on the
// measured pods and warmupValue on the warm-up ones, so the watch sees
// only the former.
const (
	benchLabel   = "podbench"
	measureValue = "measure"
	warmupValue  = "warmup"
	namespace    = metav1.NamespaceDefault
)

// benchPod is a pod of the demo image, its server answering on
// demoapp.DefaultPort, with small requests so that every pod fits on the
// two nodes. With probe it is Ready once its server answers (probed every
// second, the smallest period, so the probe adds little to the figure);
// without, once its container runs. nodeName, if set, binds it without
// the scheduler.
func benchPod(name, value, nodeName string, probe bool) *corev1.Pod {
	c := corev1.Container{
		Name:            "demo",
		Image:           devcluster.DemoImage,
		ImagePullPolicy: corev1.PullNever,
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: demoapp.DefaultPort, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
		}},
	}
	if probe {
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 1,
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{benchLabel: value}},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{c},
			// The pods are deleted with the cluster; a short grace keeps
			// the warm-up's deletion short too.
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// podReady is whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
