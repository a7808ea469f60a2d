package apiserver

import (
	"strings"
	"testing"
	"time"

	"cairn/apiserver/registry/scheduling"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodPriorityComesFromItsClass is Kubernetes' Priority admission: the
// built-in classes exist, a pod's priority is its class's value, the
// global default class applies to pods that name none, and a missing
// class or a contradicting priority is refused.
func TestPodPriorityComesFromItsClass(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := c.unthrottledClient(t, 0)
	pcs := cs.SchedulingV1().PriorityClasses()

	var sys *schedulingv1.PriorityClass
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if sys, err = pcs.Get(ctx, scheduling.SystemNodeCritical, metav1.GetOptions{}); err == nil || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("the built-in class: %v", err)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sys.Value != scheduling.SystemNodeCriticalValue {
		t.Errorf("%s = %d", sys.Name, sys.Value)
	}

	never := corev1.PreemptNever
	if _, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 100, PreemptionPolicy: &never}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	create := func(name, class string, priority *int32) (*corev1.Pod, error) {
		p := testPod(name)
		p.Spec.PriorityClassName, p.Spec.Priority = class, priority
		return pods.Create(ctx, p, metav1.CreateOptions{})
	}

	t.Run("a pod gets its class's value and policy", func(t *testing.T) {
		p, err := create("batch-pod", "batch", nil)
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(p.Spec.Priority, -1) != 100 || ptr.Deref(p.Spec.PreemptionPolicy, "") != corev1.PreemptNever {
			t.Errorf("priority %v, policy %v", p.Spec.Priority, p.Spec.PreemptionPolicy)
		}
	})
	t.Run("a pod without a class gets 0", func(t *testing.T) {
		p, err := create("plain", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(p.Spec.Priority, -1) != 0 || p.Spec.PriorityClassName != "" {
			t.Errorf("priority %v, class %q", p.Spec.Priority, p.Spec.PriorityClassName)
		}
	})
	t.Run("a missing class is refused", func(t *testing.T) {
		_, err := create("lost", "nope", nil)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no PriorityClass with name nope was found") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a priority that contradicts the class is refused", func(t *testing.T) {
		_, err := create("liar", "batch", ptr.To[int32](5))
		if !apierrors.IsForbidden(err) {
			t.Errorf("got %v", err)
		}
		if _, err := create("honest", "batch", ptr.To[int32](100)); err != nil {
			t.Errorf("the class's own value was refused: %v", err)
		}
	})
	t.Run("the global default applies to pods that name no class", func(t *testing.T) {
		if _, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Value: 10, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var p *corev1.Pod
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			if p, err = create("defaulted-"+time.Now().Format("150405.000000"), "", nil); err != nil {
				t.Fatal(err)
			}
			if p.Spec.PriorityClassName == "standard" || time.Now().After(deadline) {
				break
			}
		}
		if p.Spec.PriorityClassName != "standard" || ptr.Deref(p.Spec.Priority, -1) != 10 {
			t.Errorf("class %q priority %v", p.Spec.PriorityClassName, p.Spec.Priority)
		}
	})
	t.Run("system- names are reserved", func(t *testing.T) {
		_, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 1}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("got %v", err)
		}
	})
}
