package endpointslice

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podB builds test pods: testPod("a").ip("10.0.0.1").ready().port("http", 8080).
type podB struct{ *corev1.Pod }

func testPod(name string) podB {
	return podB{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b podB) ip(ip string) podB {
	b.Status.PodIP = ip
	b.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	return b
}

func (b podB) ready() podB {
	b.Status.Conditions = append(b.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}

func (b podB) port(name string, n int32) podB {
	c := &b.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: n, Protocol: corev1.ProtocolTCP})
	return b
}

func (b podB) node(n string) podB { b.Spec.NodeName = n; return b }

func (b podB) terminating() podB {
	now := metav1.Now()
	b.DeletionTimestamp = &now
	return b
}

func (b podB) phase(p corev1.PodPhase) podB { b.Status.Phase = p; return b }

// readyPods returns n ready pods with IPs 10.1.x.y serving port "http".
func readyPods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = testPod(fmt.Sprintf("p%03d", i)).ip(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)).ready().port("http", 8080).Pod
	}
	return out
}

func testService(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Ports: ports},
	}
}

func namedPort(name, target string) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(target)}
}
