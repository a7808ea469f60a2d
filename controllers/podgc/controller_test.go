package podgc

import (
	"context"
	"slices"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// pod builds test pods: pod("a").on("n1").phase(Failed).created(t0).
type podB struct{ *corev1.Pod }

func pod(name string) podB {
	return podB{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
}

func (b podB) on(node string) podB { b.Spec.NodeName = node; return b }
func (b podB) phase(p corev1.PodPhase) podB {
	b.Status.Phase = p
	return b
}
func (b podB) created(t time.Time) podB { b.CreationTimestamp = metav1.NewTime(t); return b }
func (b podB) deleting() podB {
	now := metav1.Now()
	b.DeletionTimestamp = &now
	return b
}

func node(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

func TestGCDeletes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	outOfService := corev1.Taint{Key: TaintOutOfService, Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name      string
		threshold int
		objs      []runtime.Object
		passes    int // gc passes, the clock moving past the quarantine between them
		deleted   []string
	}{
		{"oldest terminated pods over the threshold", 2, []runtime.Object{
			pod("new").phase(corev1.PodSucceeded).created(t0.Add(3 * time.Second)).Pod,
			pod("old").phase(corev1.PodFailed).created(t0).Pod,
			pod("mid").phase(corev1.PodSucceeded).created(t0.Add(time.Second)).Pod,
			pod("mid2").phase(corev1.PodSucceeded).created(t0.Add(2 * time.Second)).Pod,
			pod("running").phase(corev1.PodRunning).created(t0).Pod,
		}, 1, []string{"mid", "old"}},
		{"threshold zero keeps everything", 0, []runtime.Object{
			pod("a").phase(corev1.PodSucceeded).Pod, pod("b").phase(corev1.PodFailed).Pod,
		}, 1, nil},
		{"pods of a missing node after the quarantine", 0, []runtime.Object{
			node("n1", corev1.ConditionTrue), pod("kept").on("n1").Pod, pod("lost").on("gone").Pod,
		}, 2, []string{"lost"}},
		{"not during the quarantine", 0, []runtime.Object{pod("lost").on("gone").Pod}, 1, nil},
		{"terminating unscheduled pods", 0, []runtime.Object{pod("a").deleting().Pod, pod("b").Pod}, 1, []string{"a"}},
		{"terminating pods on out-of-service nodes", 0, []runtime.Object{
			node("down", corev1.ConditionUnknown, outOfService), node("ready", corev1.ConditionTrue, outOfService),
			node("notready", corev1.ConditionFalse),
			pod("a").on("down").deleting().Pod, pod("b").on("down").Pod,
			pod("c").on("ready").deleting().Pod, pod("d").on("notready").deleting().Pod,
		}, 1, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := controllers.DefaultOptions()
			opts.TerminatedPodGCThreshold = tc.threshold
			clk := clocktesting.NewFakeClock(t0)
			cc, client := clustertest.FakeContext(t, opts, clk, tc.objs...)
			c, err := New(cc, Config{})
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			for i := 0; i < tc.passes; i++ {
				c.gc(context.Background())
				clk.Step(c.cfg.Quarantine)
			}
			var deleted []string
			for _, a := range client.Actions() {
				if d, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "delete" {
					deleted = append(deleted, d.GetName())
				}
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, tc.deleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.deleted)
			}
		})
	}
}

func TestPodsOfDeletedNodeAndExcessTerminatedPodsAreDeleted(t *testing.T) {
	c := testcluster.New(t, 3)
	opts := controllers.DefaultOptions()
	opts.TerminatedPodGCThreshold = 1
	client := c.Client(0)
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Create(ctx, node("n1", corev1.ConditionTrue), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(b podB) {
		t.Helper()
		p := b.Pod.DeepCopy()
		p.UID, p.Status = "", corev1.PodStatus{}
		created, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Status.Phase != "" {
			created.Status.Phase = b.Status.Phase
			if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(pod("on-live-node").on("n1"))
	create(pod("on-ghost-node").on("ghost"))
	create(pod("done-1").on("n1").phase(corev1.PodSucceeded))
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	create(pod("done-2").on("n1").phase(corev1.PodFailed))

	clustertest.RunManager(t, c, controllers.Manager{Options: opts, Descriptors: []controllers.Descriptor{
		Descriptor(Config{CheckPeriod: 100 * time.Millisecond, Quarantine: 300 * time.Millisecond}),
	}})
	gone := func(name string) func() (bool, error) {
		return func() (bool, error) {
			_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		}
	}
	clustertest.Eventually(t, 10*time.Second, "the pod of a node that does not exist is deleted", gone("on-ghost-node"))
	clustertest.Eventually(t, 10*time.Second, "the oldest terminated pod is deleted", gone("done-1"))
	for _, name := range []string{"on-live-node", "done-2"} {
		if _, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v", name, err)
		}
	}
}
