package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// kubelet stands in for a node's agent: it registers the node and
// renews its Lease and Ready heartbeat until stopped.
type kubelet struct {
	client kubernetes.Interface
	name   string
	stop   chan struct{}
	done   sync.WaitGroup
}

func startKubelet(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *kubelet {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)}}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	k := &kubelet{client: client, name: name, stop: make(chan struct{})}
	if err := k.postReady(ctx); err != nil {
		t.Fatal(err)
	}
	k.done.Add(1)
	go func() {
		defer k.done.Done()
		for {
			select {
			case <-k.stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = k.renew(ctx)
			}
		}
	}()
	t.Cleanup(k.halt)
	return k
}

func (k *kubelet) renew(ctx context.Context) error {
	l, err := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	_, err = k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) postReady(ctx context.Context) error {
	n, err := k.client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// halt stops the heartbeats, as when the machine dies.
func (k *kubelet) halt() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	k.done.Wait()
}

func boundPod(ctx context.Context, t *testing.T, client kubernetes.Interface, name, node string, tols ...corev1.Toleration) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tols, TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	p, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// evictedAt returns when pod was marked for deletion, if it was.
func evicted(ctx context.Context, client kubernetes.Interface, name string) (bool, error) {
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return p.DeletionTimestamp != nil, nil
}

func nodeTainted(ctx context.Context, client kubernetes.Interface, name string, want ...corev1.Taint) (bool, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, w := range want {
		if !hasTaint(n.Spec.Taints, w) {
			return false, fmt.Errorf("taints %v", n.Spec.Taints)
		}
	}
	return true, nil
}

func TestSilentNodeIsTaintedAndItsPodsEvictedPerTolerations(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	opts := controllers.DefaultOptions()
	opts.NodeMonitorGracePeriod = 1500 * time.Millisecond
	opts.NodeEvictionRate = 10

	healthy := startKubelet(ctx, t, client, "healthy")
	_ = healthy
	dying := startKubelet(ctx, t, client, "dying")
	unreachableFor := func(secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	// The API server gives pods without them 300s tolerations of the
	// unreachable and not-ready taints, as Kubernetes does: a pod that
	// must leave at once says so.
	boundPod(ctx, t, client, "intolerant", "dying", unreachableFor(ptr.To[int64](0)))
	boundPod(ctx, t, client, "patient", "dying", unreachableFor(ptr.To[int64](3)))
	boundPod(ctx, t, client, "loyal", "dying", unreachableFor(nil))
	boundPod(ctx, t, client, "elsewhere", "healthy")
	boundPod(ctx, t, client, "defaulted", "dying") // tolerates for the default 300s

	clustertest.RunManager(t, c, controllers.Manager{Options: opts, Descriptors: []controllers.Descriptor{
		Descriptor(Config{MonitorPeriod: 200 * time.Millisecond, TaintPeriod: 50 * time.Millisecond}),
	}})
	time.Sleep(500 * time.Millisecond)
	if ok, _ := nodeTainted(ctx, client, "dying", unreachableTaint()); ok {
		t.Fatal("a heartbeating node was tainted")
	}

	dying.halt()
	stopped := time.Now()
	clustertest.Eventually(t, 10*time.Second, "the silent node's Ready condition becomes Unknown", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "dying", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionUnknown && cond.Reason == ReasonNodeStatusUnknown && cond.Message == MessageNodeStatusUnknown, nil
			}
		}
		return false, nil
	})
	if since := time.Since(stopped); since < opts.NodeMonitorGracePeriod {
		t.Errorf("marked Unknown %v after the last heartbeat, within the grace period", since)
	}
	clustertest.Eventually(t, 10*time.Second, "the silent node is tainted unreachable, NoExecute and NoSchedule", func() (bool, error) {
		return nodeTainted(ctx, client, "dying", unreachableTaint(), corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule})
	})
	tainted := time.Now()
	clustertest.Eventually(t, 5*time.Second, "a pod tolerating the taint for 0s is evicted at once", func() (bool, error) {
		return evicted(ctx, client, "intolerant")
	})
	if ok, _ := evicted(ctx, client, "patient"); ok && time.Since(tainted) < 2*time.Second {
		t.Fatal("a pod tolerating the taint for 3s was evicted at once")
	}
	clustertest.Eventually(t, 10*time.Second, "a pod is evicted when its tolerationSeconds run out", func() (bool, error) {
		return evicted(ctx, client, "patient")
	})
	for _, name := range []string{"loyal", "elsewhere", "defaulted"} {
		if ok, err := evicted(ctx, client, name); ok || err != nil {
			t.Errorf("pod %s evicted (%v)", name, err)
		}
	}
	if ok, _ := nodeTainted(ctx, client, "healthy", unreachableTaint()); ok {
		t.Error("the healthy node was tainted")
	}

	// The node comes back: its kubelet posts Ready and renews its Lease.
	revived := startKubelet(ctx, t, client, "dying")
	_ = revived
	clustertest.Eventually(t, 10*time.Second, "a recovered node loses its unreachable taints", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "dying", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, tt := range n.Spec.Taints {
			if tt.Key == corev1.TaintNodeUnreachable {
				return false, fmt.Errorf("taints %v", n.Spec.Taints)
			}
		}
		return true, nil
	})
}

func TestMarkDeadTaintsAtOnce(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	opts := controllers.DefaultOptions()
	opts.NodeMonitorGracePeriod = time.Minute
	opts.NodeEvictionRate = 10
	startKubelet(ctx, t, client, "a")
	k := startKubelet(ctx, t, client, "b")
	built := make(chan *Controller, 1)
	clustertest.RunManager(t, c, controllers.Manager{Options: opts, Descriptors: []controllers.Descriptor{
		Descriptor(Config{MonitorPeriod: time.Hour, TaintPeriod: 50 * time.Millisecond, Built: func(c *Controller) { built <- c }}),
	}})
	ctl := <-built
	time.Sleep(300 * time.Millisecond) // the first pass records the heartbeats
	k.halt()
	time.Sleep(200 * time.Millisecond) // the informers see the last renewal
	ctl.MarkDead("b")
	clustertest.Eventually(t, 5*time.Second, "a node reported dead is tainted without waiting for its grace period", func() (bool, error) {
		return nodeTainted(ctx, client, "b", unreachableTaint())
	})
}

// The monitor pass writes a node's Unknown status and queues it at once;
// the taint pass may run before the informer shows that write. It must
// taint from a fresh read, not drop the node as healthy.
func TestTaintPassDecidesOnAFreshRead(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
	}}}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = node.Status
	stale, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	silent := stale.DeepCopy()
	silent.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, silent, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(stale); err != nil { // the informer lags behind
		t.Fatal(err)
	}
	ctl := &Controller{client: client, nodes: corelisters.NewNodeLister(indexer), clock: clock.RealClock{},
		log: slog.New(slog.DiscardHandler), zones: map[string]*zone{}}
	z := newZone()
	z.setRate(10, ctl.clock)
	z.add("n")
	ctl.zones[zoneKey(stale)] = z
	ctl.taintPass(ctx)

	if ok, err := nodeTainted(ctx, client, "n", unreachableTaint()); !ok {
		t.Fatalf("the node was not tainted: %v", err)
	}
}
