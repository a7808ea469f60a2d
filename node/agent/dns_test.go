package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn/internal/testcluster"
	"cairn/internal/testimage"
	"cairn/node/agent"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod finds another through a Service's name, answered by its node's
// own DNS server, which its resolv.conf names; with either runtime.
func TestPodsResolveServiceNamesThroughTheNode(t *testing.T) {
	for _, rt := range []struct {
		name   string
		config func(testing.TB) agent.Config
	}{{"embedded", embeddedConfig}, {"cri", containerdConfig}} {
		t.Run(rt.name, func(t *testing.T) {
			c := testcluster.New(t, 1)
			c.EnableKubeletClient()
			n := startTestNodeOn(t, c, rt.config(t), podCIDR, func(cfg *agent.Config) { cfg.NodeDNS = true })
			resolveServiceNames(t, n)
		})
	}
}

func resolveServiceNames(t *testing.T, n *testNode) {
	ctx := context.Background()

	n.create(t, n.pod("web", corev1.Container{Name: "web", Image: testimage.HTTPServerRef,
		Command: []string{"testhttp", "serve", "-listen", ":8080"}}))
	web := n.waitPod(t, "web", 30*time.Second, "running", running)
	// A headless Service: its name resolves to the pod itself, so no
	// Service proxy is needed to reach it. The test plays the
	// EndpointSlice controller.
	_, err := n.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.client.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{web.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	client := n.pod("client", corev1.Container{Name: "get", Image: testimage.HTTPServerRef,
		Command: sh("cat /etc/resolv.conf && testhttp get http://web:8080/ && testhttp get http://web.default.svc.cluster.local:8080/")})
	client.Spec.RestartPolicy = corev1.RestartPolicyNever
	n.create(t, client)
	got := n.waitPod(t, "client", 30*time.Second, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := n.logs("client", &corev1.PodLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the client pod %s:\n%s", got.Status.Phase, logs)
	}
	for _, want := range []string{
		"nameserver 10.98.1.1", // the pod network's gateway
		"search default.svc.cluster.local svc.cluster.local cluster.local",
		"options ndots:5",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the client's resolv.conf lacks %q:\n%s", want, logs)
		}
	}
	if strings.Count(logs, "hello from web") != 2 {
		t.Errorf("the client did not reach web by both names:\n%s", logs)
	}
}
