package dev

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/internal/devcluster"
	"cairn/internal/privtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// answer is a line of the demo server: "hello from pod NAME (IP) on node NODE".
var answer = regexp.MustCompile(`^hello from pod (\S+) \((\S+)\) on node (\S+)$`)

// TestDevClusterServesTheDemoThroughALeaderKillAndLeavesNothingBehind is
// what a user of `cairn dev --demo` sees: two Ready nodes, three demo
// pods answering through their ClusterIP and by name from any pod, a
// cluster that keeps taking writes and serving the demo when the leader
// server is killed, servers and agents that `cairn dev start` brings
// back from a drill, and a host left as it was by `cairn dev down`.
func TestDevClusterServesTheDemoThroughALeaderKillAndLeavesNothingBehind(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin, privtest.CapBPF)
	if _, err := net.InterfaceByName(devcluster.BridgeName); err == nil {
		t.Fatalf("bridge %s exists: a cairn dev cluster already runs on this machine; stop it with `cairn dev down`", devcluster.BridgeName)
	}
	c := startDev(t, cairnBinary(t), devOptions{nodes: true, args: []string{"--demo"}})
	ctx := context.Background()

	var demoPods map[string]bool
	c.eventually(2*time.Minute, "2 Ready nodes and 3 Running demo pods", func() (bool, string) {
		var nodes *corev1.NodeList
		var pods *corev1.PodList
		err := c.do(func(cs kubernetes.Interface) error {
			var err error
			if nodes, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
				return err
			}
			pods, err = cs.CoreV1().Pods(devcluster.DemoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + devcluster.DemoName})
			return err
		})
		if err != nil {
			return false, err.Error()
		}
		ready := readyNodes(nodes.Items)
		demoPods = runningReady(pods.Items)
		return len(ready) == 2 && len(demoPods) == devcluster.DemoReplicas,
			fmt.Sprintf("ready nodes %v, running demo pods %v of %d%s", ready, demoPods, len(pods.Items), whyNotRunning(pods.Items))
	})

	var clusterIP string
	if err := c.do(func(cs kubernetes.Interface) error {
		svc, err := cs.CoreV1().Services(devcluster.DemoNamespace).Get(ctx, devcluster.DemoName, metav1.GetOptions{})
		if err == nil {
			clusterIP = svc.Spec.ClusterIP
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:%d/", clusterIP, devcluster.DemoServicePort)

	t.Run("a pod reaches every demo pod through the ClusterIP", func(t *testing.T) {
		log := c.runClient("client-before", url, 24)
		seen := answeringPods(t, log, demoPods)
		if len(seen) < 2 {
			t.Errorf("24 requests reached only %v: the Service does not spread connections", seen)
		}
		// The demo pods run on both nodes: the answers must come from
		// both, across the host-gw routes.
		nodes := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			if m := answer.FindStringSubmatch(line); m != nil {
				nodes[m[3]] = true
			}
		}
		want := demoNodes(t, c)
		t.Logf("answers from pods %v on nodes %v; the demo runs on %v", seen, nodes, want)
		if len(want) == 2 && len(nodes) != 2 {
			t.Errorf("answers came from nodes %v; the demo pods run on %v", nodes, want)
		}
	})

	t.Run("a pod reaches the demo by its Service's name, through its node's DNS", func(t *testing.T) {
		name := fmt.Sprintf("http://%s:%d/", devcluster.DemoName, devcluster.DemoServicePort)
		if seen := answeringPods(t, c.runClient("client-dns", name, 6), demoPods); len(seen) == 0 {
			t.Errorf("no demo pod answered at %s", name)
		}
	})

	t.Run("a pod reaches the API server through the kubernetes Service with its service account token", func(t *testing.T) {
		log := c.runPodArgs("whoami", []string{"whoami", "--retry-for", "30s"})
		if !strings.Contains(log, "user system:serviceaccount:default:default namespace default") {
			t.Errorf("the in-cluster client printed:\n%s", log)
		}
	})

	t.Run("kubectl debug adds a container that sees a demo pod's processes", func(t *testing.T) {
		checkDebug(t, c, demoPods)
	})

	t.Run("scaled down to one replica, the demo answers only from the pod left", func(t *testing.T) {
		checkScaleDown(t, c, url)
	})

	var killedLeader string
	t.Run("killing the leader server keeps writes and the demo going", func(t *testing.T) {
		leader := leaseHolder(t, c)
		st, err := devcluster.ReadRunState(c.dir)
		if err != nil || st == nil {
			t.Fatalf("run state: %v", err)
		}
		p, ok := st.Process(leader)
		if !ok || !p.Running() {
			t.Fatalf("leader %q is not a running server of %+v", leader, st.Processes)
		}
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		c.dead[leader] = true
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-leader-kill"}, Data: map[string]string{"killed": leader}}
		c.eventually(5*time.Second, "a write after the leader kill", func() (bool, string) {
			err := c.do(func(cs kubernetes.Interface) error {
				_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
				return err
			})
			return err == nil, fmt.Sprint(err)
		})
		t.Logf("killed %s (pid %d); first write accepted %s later", leader, p.PID, time.Since(killed).Round(time.Millisecond))
		c.eventually(15*time.Second, "the leader loops to move to a survivor", func() (bool, string) {
			h := leaseHolder(t, c)
			return h != leader && h != "", "Lease held by " + h
		})
		if seen := answeringPods(t, c.runClient("client-after", url, 6), demoPods); len(seen) == 0 {
			t.Error("no demo pod answered after the leader kill")
		}
		t.Logf("the demo answered %s after the kill", time.Since(killed).Round(time.Millisecond))
		killedLeader = leader
	})

	t.Run("the killed server starts again with cairn dev start and catches up", func(t *testing.T) {
		if killedLeader == "" {
			t.Skip("the leader kill failed")
		}
		checkServerComesBack(t, c, killedLeader, "after-leader-kill")
	})

	t.Run("an agent killed and started again adopts its running pods", func(t *testing.T) {
		checkAgentAdoptsItsPods(t, c)
	})

	t.Run("cairn dev down leaves nothing behind", func(t *testing.T) {
		if err := c.down(); err != nil {
			t.Fatal(err)
		}
		for _, left := range leftovers(c.dir) {
			t.Error(left)
		}
	})
}

// leaseHolder returns who holds the leader loops' Lease.
func leaseHolder(t *testing.T, c *devCluster) string {
	t.Helper()
	var holder string
	err := c.do(func(cs kubernetes.Interface) error {
		l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), "cairn-leader", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading the cairn-leader Lease: %v", err)
	}
	return holder
}

// answeringPods parses a client's log and returns the demo pods that
// answered, failing on lines that are not answers from demo pods.
func answeringPods(t *testing.T, log string, demo map[string]bool) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		m := answer.FindStringSubmatch(line)
		if m == nil || !demo[m[1]] {
			t.Errorf("unexpected line from the client: %q (demo pods %v)", line, demo)
			continue
		}
		seen[m[1]] = true
	}
	return seen
}

func readyNodes(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

func runningReady(pods []corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[p.Name] = true
			}
		}
	}
	return out
}

// demoNodes returns the nodes the demo pods run on.
func demoNodes(t *testing.T, c *devCluster) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := c.do(func(cs kubernetes.Interface) error {
		pods, err := cs.CoreV1().Pods(devcluster.DemoNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + devcluster.DemoName})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				out[p.Spec.NodeName] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// whyNotRunning says, for the first pod not running, its phase and what
// the scheduler or the kubelet said of it: a timeout then names the
// cause (a node under disk pressure, an image missing...).
func whyNotRunning(pods []corev1.Pod) string {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		why := ""
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				why = fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
				break
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && why == "" {
				why = fmt.Sprintf(" (%s: %s %s)", cs.Name, w.Reason, w.Message)
			}
		}
		return fmt.Sprintf("; %s is %s%s", p.Name, p.Status.Phase, why)
	}
	return ""
}
