package svcendpoints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestFindPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8080},
		{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
	}}}}}
	for _, tc := range []struct {
		name string
		sp   corev1.ServicePort
		want int32
		ok   bool
	}{
		{"number", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, 9000, true},
		{"unset is the service port", corev1.ServicePort{Port: 80}, 80, true},
		{"name", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"name of the protocol", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, 5353, true},
		{"name of another protocol", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns")}, 0, false},
		{"missing name", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindPort(pod, &tc.sp)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("FindPort = %d, %v; want %d, ok %v", got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestPodIncluded(t *testing.T) {
	withIP := corev1.PodStatus{PodIP: "10.0.0.1", Phase: corev1.PodRunning}
	for _, tc := range []struct {
		name        string
		status      corev1.PodStatus
		terminating bool
		include     bool // with terminating pods included
		want        bool
	}{
		{"running with an IP", withIP, false, false, true},
		{"no IP", corev1.PodStatus{Phase: corev1.PodRunning}, false, true, false},
		{"finished", corev1.PodStatus{PodIP: "10.0.0.1", Phase: corev1.PodSucceeded}, false, true, false},
		{"terminating, excluded", withIP, true, false, false},
		{"terminating, included", withIP, true, true, true},
	} {
		pod := &corev1.Pod{Status: tc.status}
		if tc.terminating {
			now := metav1.Now()
			pod.DeletionTimestamp = &now
		}
		if got := PodIncluded(pod, tc.include); got != tc.want {
			t.Errorf("%s: included = %v, want %v", tc.name, got, tc.want)
		}
	}
}
