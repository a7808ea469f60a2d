package nodelifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestEvictionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	added := metav1.NewTime(t0)
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	tol := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		evict  bool
		after  time.Duration
	}{
		{"no NoExecute taint", []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}, nil, false, 0},
		{"no toleration: at once", []corev1.Taint{unreachable}, nil, true, 0},
		{"tolerated for 30s", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](30))}, true, 30 * time.Second},
		{"tolerated forever", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, false, 0},
		{"wildcard toleration", []corev1.Taint{unreachable, notReady}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, false, 0},
		{"one of two taints untolerated", []corev1.Taint{unreachable, notReady}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, true, 0},
		{"shortest toleration wins", []corev1.Taint{unreachable}, []corev1.Toleration{
			tol(corev1.TaintNodeUnreachable, ptr.To[int64](300)), tol("", ptr.To[int64](20)),
		}, true, 20 * time.Second},
		{"negative seconds: at once", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](-5))}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{clock: clocktesting.NewFakeClock(t0), firstSeen: map[string]time.Time{}}
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.tols}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tc.taints}}
			at, evict := c.evictionTime(pod, node)
			if evict != tc.evict {
				t.Fatalf("evict = %v, want %v", evict, tc.evict)
			}
			if evict && at.Sub(t0) != tc.after {
				t.Errorf("evicted %v after the taint, want %v", at.Sub(t0), tc.after)
			}
		})
	}
}

func TestConditionTaints(t *testing.T) {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s}
	}
	for _, tc := range []struct {
		name          string
		conds         []corev1.NodeCondition
		unschedulable bool
		want          string
	}{
		{"healthy", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue)}, false, "[]"},
		{"not ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false, "[node.kubernetes.io/not-ready]"},
		{"unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, false, "[node.kubernetes.io/unreachable]"},
		{"pressure and cordon", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue),
			cond(corev1.NodeDiskPressure, corev1.ConditionTrue), cond(corev1.NodeMemoryPressure, corev1.ConditionFalse)}, true,
			"[node.kubernetes.io/disk-pressure node.kubernetes.io/unschedulable]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tc.unschedulable}, Status: corev1.NodeStatus{Conditions: tc.conds}}
			var keys []string
			for _, tt := range conditionTaints(n) {
				if tt.Effect != corev1.TaintEffectNoSchedule {
					t.Errorf("taint %v is not NoSchedule", tt)
				}
				keys = append(keys, tt.Key)
			}
			if got := fmt.Sprint(keys); got != tc.want {
				t.Errorf("taints %s, want %s", got, tc.want)
			}
		})
	}
}

func TestZoneStateAndRate(t *testing.T) {
	c := &Controller{cfg: Config{}.withDefaults(), evictionQPS: 0.1}
	for _, tc := range []struct {
		ready, notReady int
		state           zoneState
		rate            float64
	}{
		{10, 0, zoneNormal, 0.1},
		{8, 2, zoneNormal, 0.1},
		{2, 2, zoneNormal, 0.1},  // two down is never a disruption
		{1, 3, zonePartial, 0},   // small cluster: stop evicting
		{40, 60, zonePartial, 0}, // 100 nodes, 60% down, large cluster
		{0, 3, zoneFull, 0.1},
	} {
		s := c.stateOf(tc.ready, tc.notReady)
		if s != tc.state {
			t.Errorf("%d ready %d not: state %v, want %v", tc.ready, tc.notReady, s, tc.state)
		}
		want := tc.rate
		if tc.ready+tc.notReady > c.cfg.LargeClusterThreshold && s == zonePartial {
			want = c.cfg.SecondaryEvictionRate
		}
		if r := c.evictionRate(s, tc.ready+tc.notReady); r != want {
			t.Errorf("%d ready %d not: rate %v, want %v", tc.ready, tc.notReady, r, want)
		}
	}
}

// fakeCluster is a controller on a fake clientset and clock, with n nodes
// whose kubelets posted Ready at the start.
type fakeCluster struct {
	t      *testing.T
	ctl    *Controller
	client kubernetes.Interface
	clock  *clocktesting.FakeClock
	nodes  int
}

func newFakeCluster(t *testing.T, n int, rate float64) *fakeCluster {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	var objs []runtime.Object
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("n%d", i)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)}}}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
				Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t0}}})
	}
	opts := controllers.DefaultOptions()
	opts.NodeEvictionRate = rate
	cc, client := clustertest.FakeContext(t, opts, clk, objs...)
	ctl, err := New(cc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	clustertest.Start(t, cc)
	return &fakeCluster{t: t, ctl: ctl, client: client, clock: clk, nodes: n}
}

// renew renews the leases of the nodes not in dead, and waits for the
// controller's informer to see it.
func (f *fakeCluster) renew(dead map[int]bool) {
	ctx := context.Background()
	now := f.clock.Now()
	for i := 0; i < f.nodes; i++ {
		if dead[i] {
			continue
		}
		name := fmt.Sprintf("n%d", i)
		l, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: now}
		if _, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		clustertest.Eventually(f.t, 5*time.Second, "lease renewal in the informer", func() (bool, error) {
			got, err := f.ctl.leases.Leases(corev1.NamespaceNodeLease).Get(name)
			return err == nil && got.Spec.RenewTime.Time.Equal(now), err
		})
	}
}

// pass runs a monitor pass, waits for the informer to hold its writes,
// and runs a tainting pass.
func (f *fakeCluster) pass() {
	ctx := context.Background()
	f.ctl.monitor(ctx)
	clustertest.Eventually(f.t, 5*time.Second, "node status in the informer", func() (bool, error) {
		for i := 0; i < f.nodes; i++ {
			a, _ := f.client.CoreV1().Nodes().Get(ctx, fmt.Sprintf("n%d", i), metav1.GetOptions{})
			b, err := f.ctl.nodes.Get(fmt.Sprintf("n%d", i))
			if err != nil || a.ResourceVersion != b.ResourceVersion {
				return false, err
			}
		}
		return true, nil
	})
	f.ctl.taintPass(ctx)
}

func (f *fakeCluster) tainted() int {
	n := 0
	for i := 0; i < f.nodes; i++ {
		node, err := f.client.CoreV1().Nodes().Get(context.Background(), fmt.Sprintf("n%d", i), metav1.GetOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		if hasTaint(node.Spec.Taints, unreachableTaint()) {
			n++
		}
	}
	return n
}

func TestEvictionsArePacedAndStopInDisruptions(t *testing.T) {
	for _, tc := range []struct {
		name         string
		nodes        int
		dead         []int
		firstPass    int // nodes tainted once the grace period ran out
		tenSecsLater int // and ten seconds later, at 0.1 nodes/s
	}{
		{"a few nodes: one per ten seconds", 10, []int{0, 1, 2}, 1, 2},
		{"most of a small zone: none", 4, []int{0, 1, 2}, 0, 0},
		{"every node: none", 3, []int{0, 1, 2}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t, tc.nodes, 0.1)
			dead := map[int]bool{}
			for _, i := range tc.dead {
				dead[i] = true
			}
			f.pass() // records every node's heartbeats
			f.clock.Step(41 * time.Second)
			f.renew(dead)
			f.pass()
			f.pass()
			if got := f.tainted(); got != tc.firstPass {
				t.Errorf("%d nodes tainted after the grace period, want %d", got, tc.firstPass)
			}
			f.clock.Step(10 * time.Second)
			f.renew(dead)
			f.pass()
			if got := f.tainted(); got != tc.tenSecsLater {
				t.Errorf("%d nodes tainted ten seconds later, want %d", got, tc.tenSecsLater)
			}
		})
	}
}
