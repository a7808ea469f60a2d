package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func binding(pod, node string) *corev1.Binding {
	return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
}

// TestBindingAssignsPodsOnce checks what the scheduler relies on: a
// binding sets the node and the PodScheduled condition, and a second
// binding of the same pod is refused with 409, so two schedulers can
// never both place it.
func TestBindingAssignsPodsOnce(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	for _, name := range []string{"a", "legacy", "gone"} {
		if _, err := cs.CoreV1().Pods("team").Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("BindSetsNodeAndCondition", func(t *testing.T) {
		if err := c.client(1).CoreV1().Pods("team").Bind(ctx, binding("a", "n1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := cs.CoreV1().Pods("team").Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "n1" {
			t.Fatalf("nodeName %q, want n1", p.Spec.NodeName)
		}
		scheduled := false
		for _, cond := range p.Status.Conditions {
			scheduled = scheduled || cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue
		}
		if !scheduled {
			t.Fatalf("no PodScheduled=True condition: %+v", p.Status.Conditions)
		}
	})

	tests := []struct {
		name  string
		b     *corev1.Binding
		check func(error) bool
	}{
		{"SecondBindIs409", binding("a", "n2"), apierrors.IsConflict},
		{"MissingPodIs404", binding("nope", "n1"), apierrors.IsNotFound},
		{"NoNodeIs422", binding("gone", ""), apierrors.IsInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.client(2).CoreV1().Pods("team").Bind(ctx, tt.b, metav1.CreateOptions{}); !tt.check(err) {
				t.Fatalf("bind: %v", err)
			}
		})
	}

	t.Run("LegacyBindingsResource", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Post().Namespace("team").Resource("bindings").Body(binding("legacy", "n3")).Do(ctx).Error()
		if err != nil {
			t.Fatal(err)
		}
		if p, err := cs.CoreV1().Pods("team").Get(ctx, "legacy", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "n3" {
			t.Fatalf("after POST bindings: %v %v", p.Spec.NodeName, err)
		}
	})

	t.Run("DryRunBindsNothing", func(t *testing.T) {
		if err := cs.CoreV1().Pods("team").Bind(ctx, binding("gone", "n1"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if p, err := cs.CoreV1().Pods("team").Get(ctx, "gone", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
			t.Fatalf("dry-run binding bound the pod: %q %v", p.Spec.NodeName, err)
		}
	})
}

func eviction(pod string, opts *metav1.DeleteOptions) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "team"}, DeleteOptions: opts}
}

// TestEvictionDeletesPods checks what `kubectl drain` relies on: an
// eviction deletes the pod, gracefully when it runs on a node, with the
// eviction's own delete options.
func TestEvictionDeletesPods(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	pods := cs.CoreV1().Pods("team")
	for _, name := range []string{"pending", "running", "now", "dry"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if name != "pending" {
			if err := pods.Bind(ctx, binding(name, "n1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("UnscheduledPodGoesAtOnce", func(t *testing.T) {
		if err := c.client(1).PolicyV1().Evictions("team").Evict(ctx, eviction("pending", nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("evicted pending pod: %v, want NotFound", err)
		}
	})

	t.Run("ScheduledPodGetsItsGracePeriod", func(t *testing.T) {
		if err := cs.PolicyV1().Evictions("team").Evict(ctx, eviction("running", nil)); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(ctx, "running", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != corev1.DefaultTerminationGracePeriodSeconds {
			t.Fatalf("evicted running pod: deletionTimestamp %v grace %v", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
		}
	})

	t.Run("DeleteOptionsAreHonored", func(t *testing.T) {
		if err := cs.PolicyV1().Evictions("team").Evict(ctx, eviction("now", &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "now", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("evicted with grace 0: %v, want NotFound", err)
		}
		if err := cs.PolicyV1().Evictions("team").Evict(ctx, eviction("dry", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})); err != nil {
			t.Fatal(err)
		}
		if p, err := pods.Get(ctx, "dry", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("dry-run eviction touched the pod: %v", err)
		}
	})

	t.Run("MissingPodIs404", func(t *testing.T) {
		if err := cs.PolicyV1().Evictions("team").Evict(ctx, eviction("nope", nil)); !apierrors.IsNotFound(err) {
			t.Fatalf("evicting a missing pod: %v", err)
		}
	})
}
