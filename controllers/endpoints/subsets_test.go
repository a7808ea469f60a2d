package endpoints

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type podB struct{ *corev1.Pod }

func testPod(name, ip string) podB {
	return podB{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}}
}

func (b podB) ready() podB {
	b.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return b
}

func (b podB) port(name string, n int32) podB {
	b.Spec.Containers[0].Ports = append(b.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: n})
	return b
}

func (b podB) terminating() podB {
	now := metav1.Now()
	b.DeletionTimestamp = &now
	return b
}

func (b podB) hostname(h, sub string) podB {
	b.Spec.Hostname, b.Spec.Subdomain = h, sub
	return b
}

func service(publish bool, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: clusterIP, Ports: ports,
			PublishNotReadyAddresses: publish, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}
}

// render prints subsets compactly: "[ports] ready | notready; ...".
func render(subsets []corev1.EndpointSubset) string {
	out := ""
	for _, s := range subsets {
		out += "["
		for _, p := range s.Ports {
			out += fmt.Sprintf("%s:%d ", p.Name, p.Port)
		}
		out += "]"
		for _, a := range s.Addresses {
			out += " " + a.IP
			if a.Hostname != "" {
				out += "(" + a.Hostname + ")"
			}
		}
		out += " |"
		for _, a := range s.NotReadyAddresses {
			out += " " + a.IP
		}
		out += ";"
	}
	return out
}

func TestDesiredSubsets(t *testing.T) {
	http := corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		pods []podB
		want string
	}{
		{"ready and unready", service(false, "10.96.0.1", http), []podB{
			testPod("a", "10.0.0.2").ready().port("http", 8080), testPod("b", "10.0.0.1").port("http", 8080),
		}, "[http:8080 ] 10.0.0.2 | 10.0.0.1;"},
		{"named port resolved per pod", service(false, "10.96.0.1", http), []podB{
			testPod("a", "10.0.0.1").ready().port("http", 8080), testPod("b", "10.0.0.2").ready().port("http", 9090),
			testPod("c", "10.0.0.3").ready(),
		}, "[http:8080 ] 10.0.0.1 |;[http:9090 ] 10.0.0.2 |;"},
		{"terminating pods are dropped", service(false, "10.96.0.1", http), []podB{
			testPod("a", "10.0.0.1").ready().port("http", 8080).terminating(),
		}, ""},
		{"publishNotReadyAddresses keeps everything ready", service(true, "10.96.0.1", http), []podB{
			testPod("a", "10.0.0.1").port("http", 8080).terminating(),
		}, "[http:8080 ] 10.0.0.1 |;"},
		{"headless without ports", service(false, corev1.ClusterIPNone), []podB{
			testPod("a", "10.0.0.1").ready().hostname("a", "web"), testPod("b", "10.0.0.2").ready().hostname("b", "other"),
		}, "[] 10.0.0.1(a) 10.0.0.2 |;"},
		{"pods without IPs are skipped", service(false, "10.96.0.1", http), []podB{
			testPod("a", "").ready().port("http", 8080),
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := make([]*corev1.Pod, len(tc.pods))
			for i, p := range tc.pods {
				pods[i] = p.Pod
			}
			if got := render(desiredSubsets(tc.svc, pods)); got != tc.want {
				t.Errorf("subsets %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTruncateKeepsReadyAddressesFirst(t *testing.T) {
	var ready, unready []corev1.EndpointAddress
	for i := 0; i < MaxCapacity-10; i++ {
		ready = append(ready, corev1.EndpointAddress{IP: fmt.Sprintf("10.0.%d.%d", i/250, i%250)})
	}
	for i := 0; i < 50; i++ {
		unready = append(unready, corev1.EndpointAddress{IP: fmt.Sprintf("10.9.0.%d", i)})
	}
	subsets := []corev1.EndpointSubset{{Addresses: ready, NotReadyAddresses: unready}}
	if !truncate(subsets) {
		t.Fatal("not truncated")
	}
	if len(subsets[0].Addresses) != MaxCapacity-10 || len(subsets[0].NotReadyAddresses) != 10 {
		t.Errorf("kept %d ready and %d not ready", len(subsets[0].Addresses), len(subsets[0].NotReadyAddresses))
	}
	if truncate(subsets) {
		t.Error("truncated twice")
	}
}
