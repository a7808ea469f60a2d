package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/internal/testcluster"
	"cairn/scheduler"
	st "cairn/scheduler/internal/schedtest"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

const ns = "default"

// TestSchedulerPlacesPodsWhereTheRulesSay runs the scheduler against a
// real 3-replica control plane with fake nodes and checks, in order, that
// pods land where resources, taints, affinity and spreading allow, that
// an unschedulable pod is told why in Kubernetes' words, that preemption
// works end to end, and that pods bound by someone else are left alone.
func TestSchedulerPlacesPodsWhereTheRulesSay(t *testing.T) {
	c := testcluster.New(t, 3)
	cs := c.Client(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	createNode(t, cs, st.MakeNode().Name("small").Label("zone", "a").Label("pool", "general").
		Capacity(st.Res{"cpu": "1", "memory": "2Gi"}).Obj())
	createNode(t, cs, st.MakeNode().Name("big").Label("zone", "b").Label("pool", "general").
		Capacity(st.Res{"cpu": "4", "memory": "8Gi"}).Obj())
	createNode(t, cs, st.MakeNode().Name("gpu").Label("zone", "c").Label("accel", "gpu").
		Capacity(st.Res{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}).Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj())

	reg := prometheus.NewRegistry()
	s, err := scheduler.New(scheduler.Config{Client: c.Client(1), Logger: testcluster.Logger(), Identity: "test", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	place := func(t *testing.T, p *v1.Pod, want ...string) *v1.Pod {
		t.Helper()
		createPod(t, cs, p)
		got := waitBound(t, cs, p.Name)
		for _, w := range want {
			if got.Spec.NodeName == w {
				return got
			}
		}
		t.Fatalf("pod %s bound to %s, want one of %v", p.Name, got.Spec.NodeName, want)
		return nil
	}

	t.Run("ResourcesPickTheNodeThatFits", func(t *testing.T) {
		p := place(t, st.MakePod().Name("heavy").Label("app", "heavy").Req(st.Res{"cpu": "3"}).Obj(), "big")
		waitEvent(t, cs, p.Name, "Scheduled", "Successfully assigned default/heavy to big")
	})
	t.Run("TolerationAndExtendedResourceReachTheGPUNode", func(t *testing.T) {
		place(t, st.MakePod().Name("gpu-user").Label("app", "gpu-user").Req(st.Res{"nvidia.com/gpu": "1"}).
			Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(), "gpu")
	})
	t.Run("NodeAffinity", func(t *testing.T) {
		place(t, st.MakePod().Name("zone-a").Req(st.Res{"cpu": "100m"}).NodeAffinityIn("zone", "a").Obj(), "small")
	})
	t.Run("PodAffinity", func(t *testing.T) {
		place(t, st.MakePod().Name("near-gpu").Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).
			PodAffinity(v1.LabelHostname, map[string]string{"app": "gpu-user"}).Obj(), "gpu")
	})
	t.Run("PodAntiAffinity", func(t *testing.T) {
		place(t, st.MakePod().Name("shy").Req(st.Res{"cpu": "100m"}).NodeSelector("pool", "general").
			PodAntiAffinity(v1.LabelHostname, map[string]string{"app": "heavy"}).Obj(), "small")
	})
	t.Run("TopologySpread", func(t *testing.T) {
		var nodes []string
		for i := 0; i < 2; i++ {
			p := place(t, st.MakePod().Name(fmt.Sprintf("spread-%d", i)).Label("app", "spread").Req(st.Res{"cpu": "100m"}).
				NodeSelector("pool", "general").Spread(1, v1.LabelHostname, v1.DoNotSchedule, map[string]string{"app": "spread"}).Obj(), "small", "big")
			nodes = append(nodes, p.Spec.NodeName)
		}
		if nodes[0] == nodes[1] {
			t.Fatalf("both spread pods on %s", nodes[0])
		}
	})
	t.Run("UnschedulablePodIsToldWhy", func(t *testing.T) {
		p := st.MakePod().Name("too-big").Req(st.Res{"cpu": "100"}).Obj()
		createPod(t, cs, p)
		want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. " +
			"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
		cond := waitCondition(t, cs, p.Name)
		if cond.Reason != v1.PodReasonUnschedulable || cond.Message != want {
			t.Errorf("PodScheduled = %s %q\nwant Unschedulable %q", cond.Reason, cond.Message, want)
		}
		waitEvent(t, cs, p.Name, "FailedScheduling", want)
	})
	t.Run("PreemptionEvictsTheLeastImportantPod", func(t *testing.T) {
		createNode(t, cs, st.MakeNode().Name("pre").Label("role", "pre").Capacity(st.Res{"cpu": "2", "memory": "4Gi"}).
			Taint("preempt", "yes", v1.TaintEffectNoSchedule).Obj())
		onPre := func(w *st.PodWrapper) *st.PodWrapper {
			return w.NodeSelector("role", "pre").Toleration("preempt", "yes", v1.TaintEffectNoSchedule)
		}
		// Priorities come from PriorityClasses, as users set them.
		for name, value := range map[string]int32{"low": 1, "mid": 2, "high": 10} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
			if _, err := cs.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		place(t, onPre(st.MakePod().Name("low").PriorityClass("low").Req(st.Res{"cpu": "1"})).Obj(), "pre")
		place(t, onPre(st.MakePod().Name("mid").PriorityClass("mid").Req(st.Res{"cpu": "1"})).Obj(), "pre")
		createPod(t, cs, onPre(st.MakePod().Name("high").PriorityClass("high").Req(st.Res{"cpu": "1"})).Obj())

		waitFor(t, "preemptor nominated to pre", func() (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(context.Background(), "high", metav1.GetOptions{})
			return err == nil && p.Status.NominatedNodeName == "pre", err
		})
		low, err := cs.CoreV1().Pods(ns).Get(context.Background(), "low", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if low.DeletionTimestamp == nil {
			t.Fatal("victim low is not being deleted")
		}
		mid, err := cs.CoreV1().Pods(ns).Get(context.Background(), "mid", metav1.GetOptions{})
		if err != nil || mid.DeletionTimestamp != nil {
			t.Fatalf("mid should survive: %v %v", err, mid.DeletionTimestamp)
		}
		// No kubelet here: finish the victim's graceful deletion as one would.
		zero := int64(0)
		if err := cs.CoreV1().Pods(ns).Delete(context.Background(), "low", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if got := waitBound(t, cs, "high"); got.Spec.NodeName != "pre" {
			t.Fatalf("preemptor bound to %s, want pre", got.Spec.NodeName)
		}
	})
	t.Run("PodBoundBySomeoneElseIsNotBoundAgain", func(t *testing.T) {
		p := st.MakePod().Name("elsewhere").NodeSelector("missing", "label").Obj()
		createPod(t, cs, p)
		waitCondition(t, cs, p.Name)
		err := cs.CoreV1().Pods(ns).Bind(context.Background(), &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target: v1.ObjectReference{Kind: "Node", Name: "big"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A pod that arrives bound is never scheduled either, but its
		// requests count: small has 200m left, not 500m.
		createPod(t, cs, st.MakePod().Name("prebound").Node("small").Req(st.Res{"cpu": "500m"}).Obj())
		q := st.MakePod().Name("no-room").Req(st.Res{"cpu": "500m"}).NodeSelector("zone", "a").Obj()
		createPod(t, cs, q)
		if cond := waitCondition(t, cs, q.Name); !strings.Contains(cond.Message, "1 Insufficient cpu") {
			t.Fatalf("no-room: %q", cond.Message)
		}
		// Now make "elsewhere" fit small too: a scheduler that still held
		// it would try to bind it again, and the API would refuse.
		before := attempts(t, reg)
		labelNode(t, cs, "small", "missing", "label")
		time.Sleep(time.Second)
		if after := attempts(t, reg); after != before {
			t.Errorf("%v more scheduling attempts after the pod was bound elsewhere", after-before)
		}
		for _, name := range []string{"elsewhere", "prebound"} {
			if e := findEvent(t, cs, name, "Scheduled"); e != nil {
				t.Errorf("scheduler reported binding %s: %s", name, e.Message)
			}
		}
		got, err := cs.CoreV1().Pods(ns).Get(context.Background(), "elsewhere", metav1.GetOptions{})
		if err != nil || got.Spec.NodeName != "big" {
			t.Fatalf("elsewhere: %v on %q", err, got.Spec.NodeName)
		}
	})
}

func createNode(t *testing.T, cs kubernetes.Interface, n *v1.Node) {
	t.Helper()
	ctx := context.Background()
	status := n.Status
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = status
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	p = p.DeepCopy()
	p.UID = ""
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}

func waitBound(t *testing.T, cs kubernetes.Interface, name string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, name+" bound", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		pod = p
		return err == nil && p.Spec.NodeName != "", err
	})
	return pod
}

// waitCondition waits for PodScheduled=False and returns it.
func waitCondition(t *testing.T, cs kubernetes.Interface, name string) v1.PodCondition {
	t.Helper()
	var cond v1.PodCondition
	waitFor(t, name+" PodScheduled=False", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				cond = c
				return true, nil
			}
		}
		return false, nil
	})
	return cond
}

func findEvent(t *testing.T, cs kubernetes.Interface, pod, reason string) *v1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.name": pod, "reason": reason}.AsSelector().String()
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	return &list.Items[len(list.Items)-1]
}

func waitEvent(t *testing.T, cs kubernetes.Interface, pod, reason, message string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s event on %s saying %q", reason, pod, message), func() (bool, error) {
		e := findEvent(t, cs, pod, reason)
		if e == nil {
			return false, nil
		}
		if e.Source.Component != "default-scheduler" {
			return false, fmt.Errorf("event from %q", e.Source.Component)
		}
		if e.Message != message {
			return false, fmt.Errorf("event says %q", e.Message)
		}
		return true, nil
	})
}

func labelNode(t *testing.T, cs kubernetes.Interface, name, k, v string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels[k] = v
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// attempts sums the scheduler's attempt counter over every result.
func attempts(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "cairn_scheduler_schedule_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}
