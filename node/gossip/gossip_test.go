package gossip

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"cairn/internal/testcluster"
	"cairn/internal/testport"

	"github.com/hashicorp/memberlist"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// agents runs gossip members for Nodes n1..nN against a real API, member
// i talking to API server i mod the cluster's size.
type agents struct {
	t      *testing.T
	c      *testcluster.Cluster
	admin  kubernetes.Interface
	addrs  []string
	g      []*Gossip
	cancel []context.CancelFunc
	done   []chan error
}

func newAgents(t *testing.T, c *testcluster.Cluster, n int) *agents {
	addrs, err := testport.Free(n)
	if err != nil {
		t.Fatal(err)
	}
	a := &agents{t: t, c: c, admin: c.Client(0), addrs: addrs,
		g: make([]*Gossip, n), cancel: make([]context.CancelFunc, n), done: make([]chan error, n)}
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name(i)},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}}
		if _, err := a.admin.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range a.g {
			a.stop(i)
		}
	})
	return a
}

func name(i int) string { return fmt.Sprintf("n%d", i+1) }

// start runs member i; no --gossip-join: members find each other through
// the addresses they publish on their Nodes.
func (a *agents) start(i int) {
	a.t.Helper()
	g, err := New(Config{
		NodeName: name(i), BindAddr: a.addrs[i], Client: a.c.Client(i % a.c.Size()),
		Logger: testcluster.Logger().With("agent", name(i)), ReconcileInterval: 300 * time.Millisecond,
	})
	if err != nil {
		a.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	a.g[i], a.cancel[i], a.done[i] = g, cancel, done
}

// stop ends member i's Run (leaving the cluster unless it crashed).
func (a *agents) stop(i int) {
	if a.cancel[i] == nil {
		return
	}
	a.cancel[i]()
	if err := <-a.done[i]; err != nil {
		a.t.Errorf("%s: Run: %v", name(i), err)
	}
	a.cancel[i] = nil
}

// crash stops member i at once, without leaving, as kill -9 does.
func (a *agents) crash(i int) {
	a.g[i].crash()
	a.stop(i)
}

func (a *agents) node(i int) *corev1.Node {
	a.t.Helper()
	n, err := a.admin.CoreV1().Nodes().Get(context.Background(), name(i), metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return n
}

// waitMembers waits until each running member sees want members.
func (a *agents) waitMembers(want int, running ...int) {
	a.t.Helper()
	eventually(a.t, 15*time.Second, fmt.Sprintf("members %v each see %d members", running, want), func() bool {
		for _, i := range running {
			if len(a.g[i].Members()) != want {
				return false
			}
		}
		return true
	})
}

func TestKilledAgentIsReportedDeadAndClearedWhenItReturns(t *testing.T) {
	c := testcluster.New(t, 3)
	a := newAgents(t, c, 3)
	for i := range 3 {
		a.start(i)
	}
	a.waitMembers(3, 0, 1, 2)
	for i := range 3 {
		if got := a.node(i).Annotations[AddressAnnotation]; got != a.addrs[i] {
			t.Fatalf("%s publishes gossip address %q, want %q", name(i), got, a.addrs[i])
		}
	}

	killed := time.Now()
	a.crash(2)
	eventually(t, 10*time.Second, "both peers report the killed n3 dead", func() bool {
		n := a.node(2)
		return slices.Equal(Reporters(n), []string{"n1", "n2"}) && Agreed(n, 2)
	})
	t.Logf("killed agent reported dead by both peers after %v", time.Since(killed).Round(10*time.Millisecond))
	for _, r := range Reporters(a.node(2)) {
		if _, err := time.Parse(time.RFC3339, a.node(2).Annotations[ReportPrefix+r]); err != nil {
			t.Errorf("report by %s: %v", r, err)
		}
	}

	a.start(2)
	a.waitMembers(3, 0, 1, 2)
	eventually(t, 10*time.Second, "the reports clear once n3 is back", func() bool {
		return len(Reporters(a.node(2))) == 0
	})
	consistently(t, 1500*time.Millisecond, "n3 stays unreported once back", func() bool {
		return len(Reporters(a.node(2))) == 0
	})
}

func TestAgentThatLeavesIsNotReportedDead(t *testing.T) {
	c := testcluster.New(t, 1)
	a := newAgents(t, c, 3)
	for i := range 3 {
		a.start(i)
	}
	a.waitMembers(3, 0, 1, 2)
	a.stop(2) // a graceful stop: the agent leaves
	a.waitMembers(2, 0, 1)
	consistently(t, 3*time.Second, "nobody reports the agent that left", func() bool {
		return len(Reporters(a.node(2))) == 0
	})
}

func TestOneConfusedAgentCannotReachAgreement(t *testing.T) {
	c := testcluster.New(t, 1)
	a := newAgents(t, c, 3)
	for i := range 3 {
		a.start(i)
	}
	a.waitMembers(3, 0, 1, 2)

	// n1 alone wrongly believes n2 died; n3 sees it alive.
	n2 := &memberlist.Node{Name: "n2"}
	a.g[0].observe(n2, stateDead)
	eventually(t, 5*time.Second, "the confused n1 reports n2", func() bool {
		return slices.Equal(Reporters(a.node(1)), []string{"n1"})
	})
	consistently(t, 1500*time.Millisecond, "one report out of two live peers is no agreement", func() bool {
		n := a.node(1)
		return slices.Equal(Reporters(n), []string{"n1"}) && !Agreed(n, 2)
	})

	// Once n1 sees n2 alive again, it takes its report back.
	a.g[0].observe(n2, stateAlive)
	eventually(t, 5*time.Second, "n1 takes its report back", func() bool {
		return len(Reporters(a.node(1))) == 0
	})
}

func TestReportsOfAGoneReporterAreDropped(t *testing.T) {
	c := testcluster.New(t, 1)
	a := newAgents(t, c, 2)
	// A report left on n2 by a reporter whose Node no longer exists, and a
	// report on n1 from before n1 restarted.
	for i, key := range []string{ReportKey("n2"), ReportKey("gone")} {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"2025-01-02T15:04:05Z"}}}`, key)
		if _, err := a.admin.CoreV1().Nodes().Patch(context.Background(), name(i), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.start(0)
	a.start(1)
	a.waitMembers(2, 0, 1)
	eventually(t, 10*time.Second, "stale reports go", func() bool {
		return len(Reporters(a.node(0))) == 0 && len(Reporters(a.node(1))) == 0
	})
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func consistently(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			t.Fatalf("not true for %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
