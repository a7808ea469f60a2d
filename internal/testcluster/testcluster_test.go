package testcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterServesAcrossReplicas checks the harness itself: an object
// written through one API server is read through another, and the
// cluster keeps serving after its leader is killed.
func TestClusterServesAcrossReplicas(t *testing.T) {
	c := New(t, 3)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}}
	if _, err := c.Client(0).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(2).CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{}); err != nil {
		t.Fatalf("read through another replica: %v", err)
	}
	lead := c.Leader()
	c.Kill(lead)
	other := (lead + 1) % c.Size()
	if c.Leader() == lead {
		t.Fatal("killed replica still reported as leader")
	}
	if _, err := c.Client(other).CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{}); err != nil {
		t.Fatalf("read after killing the leader: %v", err)
	}
}
