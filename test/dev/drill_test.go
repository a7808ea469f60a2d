package dev

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/internal/devcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// devControl runs `cairn dev start|stop NAME` against c and returns its
// output, failing the test if it fails.
func devControl(t *testing.T, c *devCluster, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := c.command(ctx, append([]string{"dev", "--dir", c.dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn dev %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runningProcess returns the run state's process name, failing the test
// if it is not running.
func runningProcess(t *testing.T, c *devCluster, name string) devcluster.Process {
	t.Helper()
	st, err := devcluster.ReadRunState(c.dir)
	if err != nil || st == nil {
		t.Fatalf("run state: %v", err)
	}
	p, ok := st.Process(name)
	if !ok || !p.Running() {
		t.Fatalf("%s is not a running process of %+v", name, st.Processes)
	}
	return p
}

// checkServerComesBack starts the killed server name again with `cairn
// dev start` and checks that it catches up: its own API server serves
// what was written while it was down.
func checkServerComesBack(t *testing.T, c *devCluster, name, writtenMeanwhile string) {
	out := devControl(t, c, "start", name)
	if !strings.Contains(out, name+" is ready") {
		t.Errorf("cairn dev start %s said:\n%s", name, out)
	}
	p := runningProcess(t, c, name)
	c.dead[name] = false
	var own kubernetes.Interface
	for i, srv := range c.topo.Servers {
		if srv.Name == name {
			own = c.clients[i]
		}
	}
	c.eventually(30*time.Second, name+" serving the ConfigMap written while it was down", func() (bool, string) {
		_, err := own.CoreV1().ConfigMaps("default").Get(context.Background(), writtenMeanwhile, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("%s runs again as pid %d and has caught up", name, p.PID)
}

// checkAgentAdoptsItsPods kills the agent of the node a demo pod runs on
// with `cairn dev stop --kill`, starts it with `cairn dev start`, and
// checks that the agent adopted the pod's running container instead of
// starting another.
func checkAgentAdoptsItsPods(t *testing.T, c *devCluster) {
	ctx := context.Background()
	var before corev1.Pod
	if err := c.do(func(cs kubernetes.Interface) error {
		pods, err := cs.CoreV1().Pods(devcluster.DemoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + devcluster.DemoName})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if runningReady([]corev1.Pod{p})[p.Name] && len(p.Status.ContainerStatuses) == 1 {
				before = p
				return nil
			}
		}
		return fmt.Errorf("no running demo pod among %d", len(pods.Items))
	}); err != nil {
		t.Fatal(err)
	}
	short := strings.TrimPrefix(before.Spec.NodeName, devcluster.NamePrefix)
	old := runningProcess(t, c, short)
	out := devControl(t, c, "stop", short, "--kill")
	if !strings.Contains(out, short+" stopped (signal: killed)") {
		t.Errorf("cairn dev stop %s --kill said:\n%s", short, out)
	}
	if old.Running() {
		t.Fatalf("%s (pid %d) still runs after cairn dev stop --kill", short, old.PID)
	}
	out = devControl(t, c, "start", short)
	if !strings.Contains(out, before.Spec.NodeName+" is Ready") {
		t.Errorf("cairn dev start %s said:\n%s", short, out)
	}
	runningProcess(t, c, short)
	want := before.Status.ContainerStatuses[0]
	// A restarted agent that started the container anew would report
	// another container ID, or one more restart, within its first pod
	// syncs: the pod must keep its container over several of them.
	deadline := time.Now().Add(adoptionWatch)
	for time.Now().Before(deadline) {
		var p *corev1.Pod
		if err := c.do(func(cs kubernetes.Interface) error {
			var err error
			p, err = cs.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if p.UID != before.UID || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod %s/%s after the agent restart: %+v", p.Name, p.UID, p.Status.ContainerStatuses)
		}
		got := p.Status.ContainerStatuses[0]
		if got.ContainerID != want.ContainerID || got.RestartCount != want.RestartCount || got.State.Running == nil {
			t.Fatalf("after the agent restart the pod runs container %s with %d restarts (%+v); before, %s with %d: the agent did not adopt it",
				got.ContainerID, got.RestartCount, got.State, want.ContainerID, want.RestartCount)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// adoptionWatch is how long the pod's container must stay the same after
// its agent is Ready again: longer than the agent's first pod syncs.
const adoptionWatch = 5 * time.Second
