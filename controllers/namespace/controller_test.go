package namespace

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletedNamespaceIsEmptiedThenRemoved(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor(Config{RecheckPeriod: 200 * time.Millisecond})}})
	client := c.Client(0)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i), Namespace: "doomed"}}
		if _, err := client.CoreV1().ConfigMaps("doomed").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "doomed"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := client.CoreV1().Pods("doomed").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A finalizer holds this one until its owner lets it go.
	held := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "doomed", Finalizers: []string{"example.com/hold"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := client.BatchV1().Jobs("doomed").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "the namespace reports the finalizer holding its last object", func() (bool, error) {
		ns, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", ns.Status.Conditions)
	})
	cms, err := client.CoreV1().ConfigMaps("doomed").List(ctx, metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Fatalf("config maps left: %v (%v)", len(cms.Items), err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace went while content remained: %v", err)
	}

	j, err := client.BatchV1().Jobs("doomed").Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Finalizers = nil
	if _, err := client.BatchV1().Jobs("doomed").Update(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "the emptied namespace is removed", func() (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
