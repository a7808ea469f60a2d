package benchstat

import (
	"context"
	"testing"

	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStoreRevisionGrowsByOnePerWrite(t *testing.T) {
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ctx := context.Background()
	before, err := StoreRevision(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after, err := StoreRevision(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 2 {
		t.Fatalf("revision went from %d to %d over two writes, want +2", before, after)
	}
}
