package agent_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNodeOnContainerd runs a pod through containerd (--runtime cri):
// probes reach it on the CNI bridge, its logs come through the API, and
// exec, attach and port-forward reach it through the API.
func TestNodeOnContainerd(t *testing.T) {
	n := newContainerdNode(t)
	node := n.waitNode(t, nodeReady)
	if !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("runtime %q", node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	c := corev1.Container{Name: "web", Image: testimage.HTTPServerRef,
		Command: sh("echo starting; exec testhttp serve -listen :8080"),
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1}}
	n.create(t, n.pod("web", c))
	got := n.waitPod(t, "web", 60*time.Second, "ready", podReady)
	if cs := got.Status.ContainerStatuses[0]; !strings.HasPrefix(cs.ContainerID, "containerd://") || got.Status.PodIP == "" {
		t.Errorf("status %+v", got.Status)
	}
	checkCRIEgressRules(t, n)
	var logs string
	eventually(t, 10*time.Second, "logs", func() bool {
		logs, _ = n.logs("web", &corev1.PodLogOptions{})
		return strings.Contains(logs, "starting")
	}, func() any { return logs })
	n.delete(t, "web", 1)
	n.waitGone(t, "web", 30*time.Second)
	checkStreams(t, n, false)
	checkAttach(t, n)
	checkDebug(t, n)
}

// bridgeMasqChain is a chain of the CNI bridge plugin's per-pod
// masquerading: "CNI-" and a hash of the network and container.
var bridgeMasqChain = regexp.MustCompile(`(?m)^:CNI-[0-9a-f]+ `)

// checkCRIEgressRules checks that a containerd node's pod egress runs
// through the agent's node-wide rules, as on the embedded runtime (whose
// traffic the network package's tests check): traffic to the cluster
// range keeps its source, the rest is masqueraded, and the bridge
// plugin adds no masquerading of its own, which would rewrite the source
// of traffic to other nodes' pods too.
func checkCRIEgressRules(t *testing.T, n *testNode) {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+n.netns, "iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	nat := string(out)
	for _, want := range []string{
		"-A POSTROUTING -m comment --comment \"cairn: masquerade pod egress\" -j CAIRN-POSTROUTING",
		"-A CAIRN-POSTROUTING -s " + podCIDR + " -d 10.98.0.0/16 ",
		"-A CAIRN-POSTROUTING -s " + podCIDR + " -m comment --comment \"cairn: pod egress\" -j MASQUERADE",
	} {
		if !strings.Contains(nat, want) {
			t.Errorf("no %q in the node's nat table:\n%s", want, nat)
		}
	}
	if bridgeMasqChain.MatchString(nat) {
		t.Errorf("the bridge plugin masquerades pods itself:\n%s", nat)
	}
}
