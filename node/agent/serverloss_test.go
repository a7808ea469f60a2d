package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestNodeStaysReadyWhenTheAPIServerItUsesDies kills the API server (and
// store replica) the agent talks to, found on the agent's own metrics:
// the node's Lease renewals, its heartbeat (the kubelet writes status
// only on change), go on through another server far within the 40 s the
// node lifecycle controller waits before it calls a node NotReady.
func TestNodeStaysReadyWhenTheAPIServerItUsesDies(t *testing.T) {
	n := newEmbeddedNode(t, 3)
	ctx := context.Background()
	c := n.cluster

	var current string
	eventually(t, 10*time.Second, "the agent's metrics name its current API server", func() bool {
		current = currentAPIServer(t, n)
		return current != ""
	}, func() any { return current })
	victim := -1
	for i := range c.Size() {
		if c.APIHost(i) == current {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("the agent uses %s, not one of the cluster's API servers", current)
	}
	survivor := (victim + 1) % c.Size()
	client := c.Client(survivor)
	n.client = client // for the checks and the cleanup

	lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRenew := lease.Spec.RenewTime.Time
	c.Kill(victim)
	killed := time.Now()
	t.Logf("killed replica %d (%s), the agent's API server; the raft leader was %d", victim, current, c.Leader())

	// Watch the heartbeats for a while after the kill: every renewal
	// gap must stay well inside the grace period, and Ready stay True.
	const watchFor, maxGap = 8 * time.Second, 5 * time.Second
	var worst time.Duration
	renewals := 0
	for time.Since(killed) < watchFor {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the node's Lease from a surviving server: %v", err)
		}
		if renew := l.Spec.RenewTime.Time; renew.After(lastRenew) {
			worst = max(worst, renew.Sub(lastRenew))
			lastRenew = renew
			renewals++
		} else {
			worst = max(worst, time.Since(lastRenew))
		}
		node, err := client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !nodeReady(node) {
			t.Fatalf("the node is not Ready %v after the kill: %+v", time.Since(killed), node.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d Lease renewals in the %v after the kill; the longest gap %v", renewals, watchFor, worst.Round(time.Millisecond))
	if renewals == 0 || worst > maxGap {
		t.Fatalf("the agent's Lease renewals stalled: longest gap %v (renewal interval 1s; allowed %v)", worst, maxGap)
	}
	if now := currentAPIServer(t, n); now == current || now == "" {
		t.Errorf("the agent's metrics say it uses %q after %s was killed", now, current)
	}
}

// currentAPIServer reads the agent's metrics on its kubelet API and
// returns the API server (host:port) it marks current, or "".
func currentAPIServer(t *testing.T, n *testNode) string {
	t.Helper()
	admin := n.cluster.AdminConfig(0)
	tlsConfig, err := rest.TLSConfigFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 5 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", n.cfg.KubeletPort))
	if err != nil {
		t.Fatalf("the agent's metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the agent's metrics: %s", resp.Status)
	}
	current, up := "", 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "cairn_agent_apiserver_up{") {
			up++
		}
		if server, ok := strings.CutPrefix(line, `cairn_agent_apiserver_current{server="`); ok && strings.HasSuffix(line, "} 1") {
			current, _, _ = strings.Cut(server, `"`)
		}
	}
	if up == 0 {
		t.Fatal("the agent's metrics have no cairn_agent_apiserver_up")
	}
	return current
}
