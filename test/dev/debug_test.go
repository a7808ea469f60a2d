package dev

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/internal/devcluster"
)

// checkDebug runs what a user debugging a demo pod, then its node, runs
// with the embedded kubectl:
//
//	cairn kubectl debug -n demo POD --image=cairn.local/demo:v1 --target=demo -c debugger -- /cairn __demo-http ps
//	cairn kubectl debug node/NODE --image=cairn.local/demo:v1 -- /cairn __demo-http ps
//
// The ephemeral container lists the processes it sees: the demo server,
// first process of the target's PID namespace, and itself. The node's
// debugging pod sees the host's processes, the node's agent among them.
func checkDebug(t *testing.T, c *devCluster, demoPods map[string]bool) {
	var pod string
	for p := range demoPods {
		pod = p
		break
	}
	if pod == "" {
		t.Fatal("no demo pod runs")
	}
	kubectl := func(args ...string) (string, error) {
		var errs []string
		for _, i := range c.live() {
			base := []string{"kubectl", "--kubeconfig", devcluster.Layout{Dir: c.dir}.Kubeconfig(), "--server", c.topo.Servers[i].APIURL(), "-n", devcluster.DemoNamespace}
			out, err := c.command(context.Background(), append(base, args...)...).CombinedOutput()
			if err == nil {
				return string(out), nil
			}
			errs = append(errs, fmt.Sprintf("%v: %s", err, out))
		}
		return "", fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if out, err := kubectl("debug", pod, "--image="+devcluster.DemoImage, "--image-pull-policy=Never", "--target="+devcluster.DemoName,
		"-c", "debugger", "--", "/cairn", "__demo-http", "ps"); err != nil {
		t.Fatalf("cairn kubectl debug: %v\n%s", err, out)
	}
	server := regexp.MustCompile(`(?m)^1 /cairn __demo-http serve$`)
	self := regexp.MustCompile(`(?m)^[0-9]+ /cairn __demo-http ps$`)
	var logs string
	c.eventually(60*time.Second, "the debugger's process list", func() (bool, string) {
		out, err := kubectl("logs", pod, "-c", "debugger")
		if err != nil {
			return false, err.Error()
		}
		logs = out
		return server.MatchString(out) && self.MatchString(out), out
	})
	t.Logf("the debugger of %s saw:\n%s", pod, logs)
	c.eventually(30*time.Second, "the debugger to end with 0", func() (bool, string) {
		out, err := kubectl("get", "pod", pod, "-o", "jsonpath={.status.ephemeralContainerStatuses[0].state.terminated.exitCode}")
		return err == nil && strings.TrimSpace(out) == "0", fmt.Sprintf("exit code %q, err %v", out, err)
	})

	// kubectl debug node/NAME runs a pod on the host's PID, IPC and
	// network namespaces, with the host's root at /host.
	var node string
	for n := range demoNodes(t, c) {
		node = n
		break
	}
	out, err := kubectl("debug", "node/"+node, "--image="+devcluster.DemoImage, "--image-pull-policy=Never", "--", "/cairn", "__demo-http", "ps")
	if err != nil {
		t.Fatalf("cairn kubectl debug node/%s: %v\n%s", node, err, out)
	}
	m := regexp.MustCompile(`(node-debugger-\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cairn kubectl debug node/%s named no pod: %s", node, out)
	}
	agent := regexp.MustCompile(`(?m)^[0-9]+ \S*cairn agent .*--node-name ` + regexp.QuoteMeta(node) + `\b`)
	c.eventually(60*time.Second, "the node debugger's process list", func() (bool, string) {
		out, err := kubectl("logs", m[1])
		if err != nil {
			return false, err.Error()
		}
		logs = out
		return agent.MatchString(out), out
	})
	if _, err := kubectl("delete", "pod", m[1], "--wait=false"); err != nil {
		t.Error(err)
	}
}
