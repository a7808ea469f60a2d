package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
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
		if _, err := s.startServer(srv); err != nil {
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
		if _, err := s.startAgent(n, opts); err != nil {
			return err
		}
	}
	begin := time.Now()
	if err := s.waitNodesReady(ctx, s.agents, s.topo.Nodes, begin); err != nil {
		return err
	}
	s.out("Nodes Ready in %s.\n", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// startServer starts srv's process and records it in the run state,
// in place of an earlier one.
func (s *supervisor) startServer(srv Server) (*child, error) {
	c, err := startChild(s.cfg.Binary, srv.Name, KindServer, s.l.Log(srv.Name), "",
		ServerArgs(s.l, s.topo, srv, s.cfg.LogLevel), s.childExited)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.servers = replaceChild(s.servers, c)
	s.mu.Unlock()
	return c, s.saveState()
}

// startAgent starts n's agent in its network namespace and records it
// in the run state, in place of an earlier one.
func (s *supervisor) startAgent(n Node, opts NodeOptions) (*child, error) {
	opts.Proxy = s.proxyMode
	c, err := startChild(s.cfg.Binary, n.Short, KindAgent, s.l.Log(n.Short), n.NetNS(),
		AgentArgs(s.l, s.topo, n, opts, s.cfg.LogLevel), s.childExited)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.agents = replaceChild(s.agents, c)
	s.mu.Unlock()
	return c, s.saveState()
}

// replaceChild puts c in place of the child of the same name, or at the
// end.
func replaceChild(children []*child, c *child) []*child {
	for i, old := range children {
		if old.name == c.name {
			out := slices.Clone(children)
			out[i] = c
			return out
		}
	}
	return append(children, c)
}

// waitNodesReady waits until the nodes are Ready with a Lease their
// agents renewed since they started, at begin: a restarted agent's Node
// still says Ready from its last run.
func (s *supervisor) waitNodesReady(ctx context.Context, agents []*child, nodes []Node, begin time.Time) error {
	clients, err := newAPIClients(s.l.Dir, s.topo)
	if err != nil {
		return err
	}
	since := begin.Add(-time.Second)
	what := "the nodes to be Ready"
	if len(nodes) == 1 {
		what = nodes[0].Name + " to be Ready"
	}
	return s.waitFor(ctx, nodesReadyTimeout, agents, what, func() bool {
		var nodeList *corev1.NodeList
		var leases *coordinationv1.LeaseList
		err := clients.do(ctx, func(c kubernetes.Interface) error {
			var err error
			if nodeList, err = c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
				return err
			}
			leases, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
			return err
		})
		return err == nil && allReady(nodeList.Items, leases.Items, nodeNames(nodes), since)
	})
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
