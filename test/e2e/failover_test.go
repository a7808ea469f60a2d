package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestLeaderLoopsMoveOnKill9 kills the replica running the leader loops
// with SIGKILL, several times, and checks that a survivor takes them over
// and makes its first fenced write (claiming the cairn-leader Lease). It
// reports, without asserting, the time from the kill to that write, which
// the design targets at 1.5 s.
func TestLeaderLoopsMoveOnKill9(t *testing.T) {
	c := newCluster(t, pkiInit(t), "failover", "s1", "s2", "s3")
	apis := freePorts(t, len(c.members))
	for i, m := range c.members {
		m.start(t, []string{
			"server", "--name", m.name, "--data-dir", m.dataDir, "--pki-dir", c.pki,
			"--peer-listen", m.peer, "--store-listen", m.store, "--metrics-listen", m.metrics,
			"--api-listen", apis[i], "--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token,
		})
	}
	for _, m := range c.members {
		m.waitHealthy(t)
	}
	clients := map[string]kubernetes.Interface{}
	for _, m := range c.members {
		waitFile(t, filepath.Join(m.dataDir, "admin.kubeconfig"))
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(m.dataDir, "admin.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		rc.Timeout = 2 * time.Second
		clients[m.name] = kubernetes.NewForConfigOrDie(rc)
	}

	holder := waitLeaseHolder(t, clients, "", "")
	var worst time.Duration
	for round := 1; round <= 3; round++ {
		victim := c.member(t, holder)
		killed := time.Now()
		if err := victim.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-victim.done
		next := waitLeaseHolder(t, clients, holder, holder)
		lease := readLease(t, clients, holder)
		took := lease.Spec.AcquireTime.Time.Sub(killed)
		worst = max(worst, took)
		t.Logf("round %d: killed %s; %s claimed leadership (epoch write) %v later", round, holder, next, took.Round(time.Millisecond))

		// Fenced writes of the new leader go on; the victim rejoins.
		victim.start(t, victim.args)
		victim.waitHealthy(t)
		holder = next
	}
	t.Logf("leader-loop failover after kill -9: worst of 3 rounds %v (target 1.5s)", worst.Round(time.Millisecond))
}

// waitLeaseHolder waits until the cairn-leader Lease names a holder other
// than not (any holder when not is ""), asking API servers other than skip.
func waitLeaseHolder(t *testing.T, clients map[string]kubernetes.Interface, not, skip string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for name, cs := range clients {
			if name == skip {
				continue
			}
			l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "cairn-leader", metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != not {
				return *l.Spec.HolderIdentity
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the cairn-leader Lease has no holder other than %q after 30s", not)
	return ""
}

func readLease(t *testing.T, clients map[string]kubernetes.Interface, skip string) *coordinationv1.Lease {
	t.Helper()
	for name, cs := range clients {
		if name == skip {
			continue
		}
		l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "cairn-leader", metav1.GetOptions{})
		if err == nil {
			return l
		}
	}
	t.Fatal("no API server returned the cairn-leader Lease")
	return nil
}

// waitFile waits up to 30s for a file a server writes on start.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written within 30s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
