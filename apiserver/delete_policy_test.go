package apiserver

import (
	"context"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeletePropagationPolicyLeavesTheGarbageCollectorsFinalizer checks
// that Foreground and Orphan deletes mark the owner with the finalizer the
// garbage collector acts on, that Background deletes at once, and that a
// Job deleted without a policy orphans its pods, as in Kubernetes.
func TestDeletePropagationPolicyLeavesTheGarbageCollectorsFinalizer(t *testing.T) {
	c := newTestCluster(t, 1)
	cs := c.client(0)
	ctx := context.Background()
	waitNamespace(t, cs, "default")
	cms := cs.CoreV1().ConfigMaps("default")
	for _, tc := range []struct {
		name      string
		policy    metav1.DeletionPropagation
		finalizer string // "" : deleted at once
	}{
		{"foreground", metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
		{"orphan", metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
		{"background", metav1.DeletePropagationBackground, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cms.Delete(ctx, tc.name, metav1.DeleteOptions{PropagationPolicy: &tc.policy}); err != nil {
				t.Fatal(err)
			}
			got, err := cms.Get(ctx, tc.name, metav1.GetOptions{})
			if tc.finalizer == "" {
				if err == nil {
					t.Fatalf("still there after a background delete: %v", got.Finalizers)
				}
				return
			}
			if err != nil || got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, tc.finalizer) {
				t.Fatalf("after a %s delete: %v, %v; want deletionTimestamp and finalizer %s", tc.policy, got, err, tc.finalizer)
			}
		})
	}
	t.Run("JobDefaultsToOrphan", func(t *testing.T) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}}
		if _, err := cs.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.BatchV1().Jobs("default").Delete(ctx, "j", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cs.BatchV1().Jobs("default").Get(ctx, "j", metav1.GetOptions{})
		if err != nil || !slices.Contains(got.Finalizers, metav1.FinalizerOrphanDependents) {
			t.Fatalf("job after a delete without policy: %v, %v; want the orphan finalizer", got, err)
		}
	})
}
