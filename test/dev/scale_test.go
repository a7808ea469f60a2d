package dev

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/internal/devcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Bounds of the scale-down check. scaleDownConverge is for the
// controllers to leave one demo pod. The client does not retry: a
// connection sent to a removed backend, refused or timing out, fails it
// instead of being retried until the live one answers.
const (
	scaleDownConverge = 20 * time.Second
	scaleDownRequests = 8
)

// checkScaleDown scales the demo Deployment to one replica and checks
// that, once the controllers have left one demo pod, every request to
// the Service from a new pod is answered by that pod: the datapath has
// dropped the removed backends.
func checkScaleDown(t *testing.T, c *devCluster, url string) {
	ctx := context.Background()
	scaled := time.Now()
	if err := c.do(func(cs kubernetes.Interface) error {
		deps := cs.AppsV1().Deployments(devcluster.DemoNamespace)
		s, err := deps.GetScale(ctx, devcluster.DemoName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = 1
		_, err = deps.UpdateScale(ctx, devcluster.DemoName, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("scaling the demo to 1: %v", err)
	}

	var left string
	c.eventually(scaleDownConverge, "one demo pod left after scaling to 1", func() (bool, string) {
		var pods *corev1.PodList
		if err := c.do(func(cs kubernetes.Interface) error {
			var err error
			pods, err = cs.CoreV1().Pods(devcluster.DemoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + devcluster.DemoName})
			return err
		}); err != nil {
			return false, err.Error()
		}
		var live []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p.Name)
			}
		}
		ready := runningReady(pods.Items)
		if len(live) == 1 && ready[live[0]] {
			left = live[0]
			return true, ""
		}
		return false, fmt.Sprintf("pods not being deleted %v, of which Ready %v", live, ready)
	})
	t.Logf("one demo pod (%s) left %s after the scale", left, time.Since(scaled).Round(time.Millisecond))

	log := c.runClientRetrying("client-scaled", url, scaleDownRequests, 0)
	seen := answeringPods(t, log, map[string]bool{left: true})
	if n := len(strings.Split(strings.TrimSpace(log), "\n")); n != scaleDownRequests || len(seen) != 1 {
		t.Errorf("%d requests got %d answers, from %v; want every one from %s", scaleDownRequests, n, seen, left)
	}
	t.Logf("the Service answered only from %s %s after the scale", left, time.Since(scaled).Round(time.Millisecond))
}
