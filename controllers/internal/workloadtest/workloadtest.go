// Package workloadtest holds what the workload controllers' integration
// tests share: running controllers against a test cluster, a namespace
// per test, and polling for a condition with a readable failure.
package workloadtest

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RunManager runs a controller manager with descriptors against cfg until
// the test ends.
func RunManager(t testing.TB, cfg *rest.Config, descriptors ...controllers.Descriptor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m := &controllers.Manager{Descriptors: descriptors, Logger: testcluster.Logger()}
	go func() {
		defer close(done)
		if err := m.Run(ctx, cfg); err != nil && ctx.Err() == nil {
			t.Errorf("controller manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// Namespace creates the namespace name.
func Namespace(t testing.TB, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// Eventually polls cond every 50ms until it holds, failing the test with
// what and cond's last error or state after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var state string
	for {
		var ok bool
		ok, state = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last seen: %s", what, timeout, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
