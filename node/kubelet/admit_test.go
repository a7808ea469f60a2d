package kubelet

import (
	"testing"

	"cairn/scheduler/framework"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmissionFitsPodsAsTheKubeletDoes(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"disk": "ssd"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("3"),
		}},
	}
	withCPU := func(name, cpu string) *corev1.Pod {
		p := testPod(name).Container("a").Build()
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		return p
	}
	withPort := func(name string, port int32) *corev1.Pod {
		p := testPod(name).Container("a").Build()
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: port, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		return p
	}
	selecting := func(label string) *corev1.Pod {
		p := testPod("sel").Container("a").Build()
		p.Spec.NodeSelector = map[string]string{"disk": label}
		return p
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		taint    corev1.TaintEffect
		tolerate bool
		reason   string
		msg      string
	}{
		{name: "fits", pod: withCPU("p", "500m"), existing: []*corev1.Pod{withCPU("e", "500m")}},
		{name: "out of cpu", pod: withCPU("p", "600m"), existing: []*corev1.Pod{withCPU("e", "500m")},
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000"},
		{name: "out of pods", pod: withCPU("p", "1m"), existing: []*corev1.Pod{withCPU("e1", "1m"), withCPU("e2", "1m"), withCPU("e3", "1m")},
			reason: "OutOfpods", msg: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "selector matches", pod: selecting("ssd")},
		{name: "selector does not match", pod: selecting("hdd"), reason: "NodeAffinity",
			msg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "host port taken", pod: withPort("p", 8080), existing: []*corev1.Pod{withPort("e", 8080)}, reason: "NodePorts",
			msg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "another host port", pod: withPort("p", 8081), existing: []*corev1.Pod{withPort("e", 8080)}},
		{name: "a NoExecute taint", taint: corev1.TaintEffectNoExecute, pod: withCPU("p", "1m"), reason: "TaintToleration",
			msg: "Predicate TaintToleration failed: node(s) had untolerated taint {drain: now}"},
		{name: "a tolerated NoExecute taint", taint: corev1.TaintEffectNoExecute, tolerate: true, pod: withCPU("p", "1m")},
		{name: "a NoSchedule taint", taint: corev1.TaintEffectNoSchedule, pod: withCPU("p", "1m")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var infos []*framework.PodInfo
			for _, p := range tt.existing {
				infos = append(infos, framework.NewPodInfo(p))
			}
			node := node.DeepCopy()
			if tt.taint != "" {
				node.Spec.Taints = []corev1.Taint{{Key: "drain", Value: "now", Effect: tt.taint}}
			}
			if tt.tolerate {
				tt.pod.Spec.Tolerations = []corev1.Toleration{{Key: "drain", Operator: corev1.TolerationOpExists}}
			}
			reason, msg, ok := fits(framework.NewPodInfo(tt.pod), framework.NewNodeInfo(node, infos...))
			if reason != tt.reason || msg != tt.msg || ok != (tt.reason == "") {
				t.Errorf("fits = %q, %q, %v; want %q, %q", reason, msg, ok, tt.reason, tt.msg)
			}
		})
	}
}
