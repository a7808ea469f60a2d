package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestWatchersEncodeSharedObjectsConcurrently has several watchers, in
// JSON and protobuf, encode the same cached events at once. Under -race it
// catches an encoder that writes to the shared objects.
func TestWatchersEncodeSharedObjectsConcurrently(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	json := c.client(0)
	protoCfg := c.restConfig(0, "admin", "system:masters")
	protoCfg.ContentType = "application/vnd.kubernetes.protobuf"
	protoCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	proto := kubernetes.NewForConfigOrDie(protoCfg)
	const objects = 20
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		cs := json
		if i%2 == 1 {
			cs = proto
		}
		w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{LabelSelector: "shared=yes"})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(i int, w watch.Interface) {
			defer wg.Done()
			defer w.Stop()
			seen := 0
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added {
					if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || cm.Labels["shared"] != "yes" {
						t.Errorf("watcher %d: event object %#v", i, ev.Object)
						return
					}
					if seen++; seen == objects {
						return
					}
				}
			}
			t.Errorf("watcher %d saw %d of %d objects", i, seen, objects)
		}(i, w)
	}
	for i := 0; i < objects; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shared-%d", i), Labels: map[string]string{"shared": "yes"}}}
		if _, err := json.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
