package apiserver

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestPodExecAttachAndPortForwardAreCheckedBeforeTheKubelet covers what the API
// server answers itself; node/agent's tests run exec and port-forward
// through it into real pods.
func TestPodExecAttachAndPortForwardAreCheckedBeforeTheKubelet(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := startAPIWithKubeletClient(t, c)
	asNode, err := kubernetes.NewForConfig(c.restConfig(0, "system:node:n1", "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, c, "team")
	// A node whose kubelet port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("team")
	for _, name := range []string{"running", "done", "pending"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if name == "pending" {
			continue
		}
		if err := pods.Bind(ctx, binding(name, "n1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		if name == "done" {
			p.Status.Phase = corev1.PodSucceeded
		}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{ResourceVersion: "0"}); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	exec := func(pod string, opts *corev1.PodExecOptions) error {
		return cs.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name(pod).SubResource("exec").
			VersionedParams(opts, scheme.ParameterCodec).Do(ctx).Error()
	}
	forward := func(pod, ports string) error {
		req := cs.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name(pod).SubResource("portforward")
		if ports != "" {
			req = req.Param("ports", ports)
		}
		return req.Do(ctx).Error()
	}
	for _, tt := range []struct {
		name string
		call func() error
		code int
		want string
	}{
		{"ExecNeedsACommand", func() error { return exec("running", &corev1.PodExecOptions{Stdout: true}) }, http.StatusBadRequest, "at least one command"},
		{"ExecOfAMissingContainer", func() error {
			return exec("running", &corev1.PodExecOptions{Container: "nope", Command: []string{"sh"}, Stdout: true})
		}, http.StatusBadRequest, "container nope is not valid for pod running"},
		{"ExecInACompletedPod", func() error { return exec("done", &corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}) },
			http.StatusBadRequest, "cannot exec into a container in a completed pod; current phase is Succeeded"},
		{"ExecInAnUnscheduledPod", func() error { return exec("pending", &corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}) },
			http.StatusBadRequest, "does not have a host assigned"},
		{"ExecWithTheKubeletDown", func() error { return exec("running", &corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}) },
			http.StatusServiceUnavailable, "reaching the kubelet of node n1"},
		{"ExecAsANode", func() error {
			return asNode.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("running").SubResource("exec").
				VersionedParams(&corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}, scheme.ParameterCodec).Do(ctx).Error()
		}, http.StatusForbidden, `user "system:node:n1" is a node, and nodes may not use pods/exec`},
		{"PortForwardAsANode", func() error {
			return asNode.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("running").SubResource("portforward").Do(ctx).Error()
		}, http.StatusForbidden, "nodes may not use pods/portforward"},
		{"AttachToACompletedPod", func() error {
			return cs.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("done").SubResource("attach").
				VersionedParams(&corev1.PodAttachOptions{Stdout: true}, scheme.ParameterCodec).Do(ctx).Error()
		}, http.StatusBadRequest, "cannot attach into a container in a completed pod"},
		{"PortForwardToABadPort", func() error { return forward("running", "8080,0") }, http.StatusBadRequest, `invalid port "0"`},
		{"PortForwardToANotRunningPod", func() error { return forward("done", "") }, http.StatusBadRequest, "pod done is not running"},
		{"PortForwardWithTheKubeletDown", func() error { return forward("running", "8080") }, http.StatusServiceUnavailable, "reaching the kubelet of node n1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var status apierrors.APIStatus
			if !errors.As(err, &status) || int(status.Status().Code) != tt.code || !strings.Contains(status.Status().Message, tt.want) {
				t.Fatalf("got %v, want a %d with %q", err, tt.code, tt.want)
			}
		})
	}
}

// TestAnotherNodesKubeletCertificateIsRefused: a kubelet that presents a
// node certificate of the cluster CA for the right address, but another
// node's, gets neither logs nor exec sessions.
func TestAnotherNodesKubeletCertificateIsRefused(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	impostor := startFakeKubeletAs(t, c.ca, "system:node:n2")
	cs := startAPIWithKubeletClient(t, c)
	createNamespace(t, c, "team")
	host, port, _ := net.SplitHostPort(impostor.srv.Listener.Addr().String())
	kubeletPort, _ := strconv.Atoi(port)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(kubeletPort)}},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("team")
	if _, err := pods.Create(ctx, testPod("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, binding("one", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// The node may not be in the API server's cache yet. (client-go
		// does not decode a log request's error: read the Status itself.)
		body, _ = pods.GetLogs("one", &corev1.PodLogOptions{}).Do(ctx).Raw()
		if strings.Contains(string(body), "certificate") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(body), "the kubelet of node n1 presented node n2's certificate") {
		t.Errorf("logs through another node's kubelet certificate: %s", body)
	}
	err := cs.CoreV1().RESTClient().Post().Namespace("team").Resource("pods").Name("one").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}, scheme.ParameterCodec).Do(ctx).Error()
	if err == nil || !strings.Contains(err.Error(), "presented node n2's certificate") {
		t.Errorf("exec through another node's kubelet certificate: %v", err)
	}
	if u, _ := impostor.last(); u != nil {
		t.Errorf("the impostor was asked %v", u)
	}
}
