package deployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers/deployment"
	"cairn/controllers/garbagecollector"
	"cairn/controllers/internal/workloadtest"
	"cairn/controllers/replicaset"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletingADeploymentRemovesItsReplicaSetsAndPods(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ns := workloadtest.Namespace(t, client, "cascade")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), replicaset.Descriptor(), deployment.Descriptor(),
		garbagecollector.Descriptor(garbagecollector.Config{DiscoveryPeriod: time.Second}))
	pods := watchPods(t, client, ns)
	ctx := context.Background()

	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			d := webDeployment(ns, 3, "img:a")
			if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, "web", 30*time.Second)
			// A second revision, so that more than one ReplicaSet goes.
			setImage(t, client, ns, "web", "img:b")
			waitRolledOut(t, client, ns, "web", 30*time.Second)
			if sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(sets.Items) != 2 {
				t.Fatalf("before the deletion: replica sets %v, %v; want 2", sets, err)
			}

			err := client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil {
				t.Fatal(err)
			}
			workloadtest.Eventually(t, 30*time.Second, "the deployment, its replica sets and pods gone", func() (bool, string) {
				_, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					return false, fmt.Sprintf("deployment: %v", err)
				}
				sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				left := pods.images()
				return len(sets.Items) == 0 && len(left) == 0, fmt.Sprintf("%d replica sets, pods %v", len(sets.Items), left)
			})
		})
	}
}
