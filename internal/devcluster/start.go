package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startServers starts the three servers and waits until each API server
// is ready.
func (s *supervisor) startServers(ctx context.Context) error {
	s.out("Starting servers %s...\n", strings.Join(names(s.topo.Servers), ", "))
	for _, srv := range s.topo.Servers {
		c, err := startChild(s.cfg.Binary, srv.Name, KindServer, s.l.Log(srv.Name), "",
			ServerArgs(s.l, s.topo, srv, s.cfg.LogLevel), s.childExited)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.servers = append(s.servers, c)
		s.mu.Unlock()
		if err := s.saveState(); err != nil {
			return err
		}
	}
	clients, err := newAPIClients(s.l.Dir, s.topo)
	if err != nil {
		return err
	}
	begin := time.Now()
	err = s.waitFor(ctx, serversReadyTimeout, s.servers, "the API servers to be ready", func() bool {
		for _, c := range clients {
			if !ready(ctx, c) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	s.out("Servers ready in %s.\n", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// startAgents starts the agents, each in its network namespace, and
// waits until their nodes are Ready.
func (s *supervisor) startAgents(ctx context.Context) error {
	opts := s.nodeOptions()
	s.out("Starting agents %s (%s CPU, %s memory each)...\n", strings.Join(nodeNames(s.topo.Nodes), ", "), opts.CPU, opts.Memory)
	for _, n := range s.topo.Nodes {
		o := opts
		o.Proxy = s.proxyMode
		c, err := startChild(s.cfg.Binary, n.Short, KindAgent, s.l.Log(n.Short), n.NetNS(),
			AgentArgs(s.l, s.topo, n, o, s.cfg.LogLevel), s.childExited)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.agents = append(s.agents, c)
		s.mu.Unlock()
		if err := s.saveState(); err != nil {
			return err
		}
	}
	clients, err := newAPIClients(s.l.Dir, s.topo)
	if err != nil {
		return err
	}
	// A restarted cluster's Nodes still say Ready from the last run: only
	// a Lease renewed by these agents counts.
	begin := time.Now()
	since := begin.Add(-time.Second)
	err = s.waitFor(ctx, nodesReadyTimeout, s.agents, "the nodes to be Ready", func() bool {
		var nodes *corev1.NodeList
		var leases *coordinationv1.LeaseList
		err := clients.do(ctx, func(c kubernetes.Interface) error {
			var err error
			if nodes, err = c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
				return err
			}
			leases, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
			return err
		})
		return err == nil && allReady(nodes.Items, leases.Items, nodeNames(s.topo.Nodes), since)
	})
	if err != nil {
		return err
	}
	s.out("Nodes Ready in %s.\n", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// allReady reports whether every named node is Ready with a Lease
// renewed after since.
func allReady(nodes []corev1.Node, leases []coordinationv1.Lease, want []string, since time.Time) bool {
	ready := map[string]bool{}
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	renewed := map[string]bool{}
	for _, l := range leases {
		if l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since) {
			renewed[l.Name] = true
		}
	}
	for _, w := range want {
		if !ready[w] || !renewed[w] {
			return false
		}
	}
	return true
}

// waitFor polls done until it holds, ctx ends, timeout passes or one of
// the children exits, which fails the start with the end of its log.
func (s *supervisor) waitFor(ctx context.Context, timeout time.Duration, children []*child, what string, done func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		for _, c := range children {
			if c.exited() {
				return fmt.Errorf("devcluster: %s exited while waiting for %s (%s); the end of %s:\n%s",
					c.name, what, c.exitStatus(), c.log, tail(c.log, 15))
			}
		}
		if done() {
			return nil
		}
		if time.Now().After(deadline) {
			var logs []string
			for _, c := range children {
				logs = append(logs, c.log)
			}
			return fmt.Errorf("devcluster: timed out after %s waiting for %s; see %s", timeout, what, strings.Join(logs, " "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, "  "+sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func names(servers []Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Name)
	}
	return out
}

func nodeNames(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
