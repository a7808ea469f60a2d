package nodelifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/controllers/internal/clusterutil"
	"cairn/internal/testcluster"
	"cairn/node/gossip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// setReports writes reports on node by reporters (nil value: removes
// them), with the annotation keys the agents' gossip uses.
func setReports(ctx context.Context, t *testing.T, client kubernetes.Interface, node string, report bool, reporters ...string) {
	t.Helper()
	set := map[string]any{}
	for _, r := range reporters {
		set[gossip.ReportKey(r)] = nil
		if report {
			set[gossip.ReportKey(r)] = time.Now().UTC().Format(time.RFC3339)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readyStatus(ctx context.Context, client kubernetes.Interface, name string) (corev1.ConditionStatus, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if cond := clusterutil.NodeCondition(n, corev1.NodeReady); cond != nil {
		return cond.Status, nil
	}
	return "", nil
}

func TestPeersAgreeingANodeIsDeadMakeItNotReadyAtOnce(t *testing.T) {
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ctx := context.Background()
	opts := controllers.DefaultOptions()
	opts.NodeMonitorGracePeriod = time.Minute // only the reports can explain a quick NotReady
	opts.NodeEvictionRate = 10
	kubelets := map[string]*kubelet{}
	for _, n := range []string{"a", "b", "c", "d"} {
		kubelets[n] = startKubelet(ctx, t, client, n)
	}
	clustertest.RunManager(t, c, controllers.Manager{Options: opts, Descriptors: []controllers.Descriptor{
		Descriptor(Config{MonitorPeriod: 500 * time.Millisecond, TaintPeriod: 50 * time.Millisecond}),
	}})
	time.Sleep(700 * time.Millisecond) // a first pass records the heartbeats

	t.Run("one report is not enough", func(t *testing.T) {
		setReports(ctx, t, client, "c", true, "a")
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := readyStatus(ctx, client, "c"); err != nil || st != corev1.ConditionTrue {
				t.Fatalf("node c reported by one peer of three: Ready %q (%v)", st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		setReports(ctx, t, client, "c", false, "a")
	})

	t.Run("two reports make the node NotReady and tainted", func(t *testing.T) {
		kubelets["d"].halt()
		time.Sleep(200 * time.Millisecond) // the informers see the last renewal
		reported := time.Now()
		setReports(ctx, t, client, "d", true, "a", "b")
		clustertest.Eventually(t, 3*time.Second, "node d reported by two peers goes Unknown", func() (bool, error) {
			st, err := readyStatus(ctx, client, "d")
			return st == corev1.ConditionUnknown, err
		})
		t.Logf("node d NotReady %v after the second report", time.Since(reported).Round(10*time.Millisecond))
		clustertest.Eventually(t, 3*time.Second, "node d is tainted unreachable", func() (bool, error) {
			return nodeTainted(ctx, client, "d", unreachableTaint())
		})
	})

	t.Run("reports cleared and heartbeats back: the node recovers", func(t *testing.T) {
		setReports(ctx, t, client, "d", false, "a", "b")
		startKubelet(ctx, t, client, "d")
		clustertest.Eventually(t, 5*time.Second, "node d is Ready and untainted again", func() (bool, error) {
			st, err := readyStatus(ctx, client, "d")
			if err != nil || st != corev1.ConditionTrue {
				return false, err
			}
			tainted, _ := nodeTainted(ctx, client, "d", unreachableTaint())
			return !tainted, nil
		})
	})
}
