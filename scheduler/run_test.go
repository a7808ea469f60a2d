package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cairn/scheduler"
	st "cairn/scheduler/internal/schedtest"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// newFakeClient returns a fake clientset whose pods/binding sets the
// pod's node, as the API server does.
func newFakeClient(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(v1.Resource("pods/binding"), b.Name, fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		return true, b, cs.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), pod, b.Namespace)
	})
	return cs
}

// TestRunBindsEveryPodThatFits drives the whole scheduler (informers,
// queue, cycles, asynchronous binds, failures) against a fake API; run
// it with -race. A pod of another scheduler is left alone.
func TestRunBindsEveryPodThatFits(t *testing.T) {
	var objs []runtime.Object
	for i := range 20 {
		objs = append(objs, st.MakeNode().Name(fmt.Sprintf("n%d", i)).Label("zone", fmt.Sprint(i%3)).Capacity(st.Res{"cpu": "1"}).Obj())
	}
	for i := range 200 {
		w := st.MakePod().Name(fmt.Sprintf("p%d", i)).Label("app", fmt.Sprint(i%4)).Req(st.Res{"cpu": "100m"})
		if i%4 == 0 {
			w.Spread(1, "zone", v1.ScheduleAnyway, map[string]string{"app": "0"})
		}
		objs = append(objs, w.Obj())
	}
	objs = append(objs, st.MakePod().Name("too-big").Req(st.Res{"cpu": "2"}).Obj(),
		st.MakePod().Name("foreign").SchedulerName("other-scheduler").Obj())
	cs := newFakeClient(objs...)
	s, err := scheduler.New(scheduler.Config{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound, perNode, failed := 0, map[string]int{}, false
		for _, p := range pods.Items {
			if p.Name == "foreign" && (p.Spec.NodeName != "" || len(p.Status.Conditions) > 0) {
				t.Fatal("a pod of another scheduler was touched")
			}
			if p.Spec.NodeName != "" {
				bound++
				perNode[p.Spec.NodeName]++
			}
			if p.Name == "too-big" && len(p.Status.Conditions) > 0 {
				failed = true
			}
		}
		if bound == 200 && failed {
			for n, c := range perNode {
				if c > 10 {
					t.Errorf("node %s got %d pods of 100m on 1 cpu", n, c)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 200 pods bound, too-big marked: %v", bound, failed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailedBindIsForgottenAndRetried fails a pod's first binding: the
// pod must not stay counted on the node (it would then no longer fit
// there) and must be bound after its backoff.
func TestFailedBindIsForgottenAndRetried(t *testing.T) {
	cs := newFakeClient(
		st.MakeNode().Name("only").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakePod().Name("p").Req(st.Res{"cpu": "1"}).Obj(),
	)
	var failures atomic.Int32
	cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.CreateAction).GetSubresource() == "binding" && failures.Add(1) == 1 {
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
		}
		return false, nil, nil
	})
	s, err := scheduler.New(scheduler.Config{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName == "only" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not bound after a failed binding; conditions %v", p.Status.Conditions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := failures.Load(); n != 2 {
		t.Errorf("%d binding attempts, want 2", n)
	}
}
