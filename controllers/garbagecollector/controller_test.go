package garbagecollector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func ownerRef(cm *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: ptr.To(block)}
}

func configMap(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// deleteWith deletes a config map with propagation policy p. The
// policy's finalizer is put on first: that is the state a Foreground or
// Orphan DELETE leaves the owner in, which the collector works from.
func deleteWith(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, p metav1.DeletionPropagation) {
	t.Helper()
	if f := policyFinalizer(p); f != "" {
		cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Finalizers = append(cm.Finalizers, f)
		up, err := client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitCached(ctx, t, client, up)
	}
	if err := client.CoreV1().ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
		t.Fatal(err)
	}
}

// waitCached waits until the API server's cache holds cm's latest
// version, so that the DELETE that follows is judged on it.
func waitCached(ctx context.Context, t *testing.T, client kubernetes.Interface, cm *corev1.ConfigMap) {
	t.Helper()
	clustertest.Eventually(t, 5*time.Second, "the cache holds "+cm.Name, func() (bool, error) {
		got, err := client.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{ResourceVersion: "0"})
		return err == nil && got.ResourceVersion == cm.ResourceVersion, err
	})
}

func policyFinalizer(p metav1.DeletionPropagation) string {
	switch p {
	case metav1.DeletePropagationForeground:
		return metav1.FinalizerDeleteDependents
	case metav1.DeletePropagationOrphan:
		return metav1.FinalizerOrphanDependents
	}
	return ""
}

func configMapGone(ctx context.Context, client kubernetes.Interface, name string) func() (bool, error) {
	return func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func runCollector(t *testing.T, c *testcluster.Cluster) {
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor(Config{})}})
}

func TestDeletingAnOwnerPropagatesToDependents(t *testing.T) {
	c := testcluster.New(t, 3)
	runCollector(t, c)
	client := c.Client(0)
	ctx := context.Background()

	t.Run("Background", func(t *testing.T) {
		owner := configMap(ctx, t, client, "bg-owner")
		configMap(ctx, t, client, "bg-dep-1", ownerRef(owner, false))
		configMap(ctx, t, client, "bg-dep-2", ownerRef(owner, true))
		deleteWith(ctx, t, client, "bg-owner", metav1.DeletePropagationBackground)
		for _, name := range []string{"bg-owner", "bg-dep-1", "bg-dep-2"} {
			clustertest.Eventually(t, 10*time.Second, name+" deleted", configMapGone(ctx, client, name))
		}
	})

	t.Run("Foreground", func(t *testing.T) {
		owner := configMap(ctx, t, client, "fg-owner")
		configMap(ctx, t, client, "fg-dep-1", ownerRef(owner, true))
		mid := configMap(ctx, t, client, "fg-dep-2", ownerRef(owner, true))
		configMap(ctx, t, client, "fg-grandchild", ownerRef(mid, true))
		deleteWith(ctx, t, client, "fg-owner", metav1.DeletePropagationForeground)
		clustertest.Eventually(t, 10*time.Second, "the owner goes last", func() (bool, error) {
			gone, err := configMapGone(ctx, client, "fg-owner")()
			if !gone || err != nil {
				return false, err
			}
			for _, name := range []string{"fg-dep-1", "fg-dep-2", "fg-grandchild"} {
				if ok, _ := configMapGone(ctx, client, name)(); !ok {
					t.Fatalf("the owner went before %s", name)
				}
			}
			return true, nil
		})
	})

	t.Run("Orphan", func(t *testing.T) {
		owner := configMap(ctx, t, client, "or-owner")
		configMap(ctx, t, client, "or-dep", ownerRef(owner, true))
		deleteWith(ctx, t, client, "or-owner", metav1.DeletePropagationOrphan)
		clustertest.Eventually(t, 10*time.Second, "the orphaning owner is deleted", configMapGone(ctx, client, "or-owner"))
		dep, err := client.CoreV1().ConfigMaps("default").Get(ctx, "or-dep", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the orphaned dependent: %v", err)
		}
		if len(dep.OwnerReferences) != 0 {
			t.Errorf("the orphan keeps owner references %v", dep.OwnerReferences)
		}
	})

	t.Run("AnotherOwnerKeepsTheDependent", func(t *testing.T) {
		a := configMap(ctx, t, client, "two-a")
		b := configMap(ctx, t, client, "two-b")
		configMap(ctx, t, client, "two-dep", ownerRef(a, false), ownerRef(b, false))
		deleteWith(ctx, t, client, "two-a", metav1.DeletePropagationBackground)
		clustertest.Eventually(t, 10*time.Second, "the reference to the deleted owner is dropped", func() (bool, error) {
			dep, err := client.CoreV1().ConfigMaps("default").Get(ctx, "two-dep", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return len(dep.OwnerReferences) == 1 && dep.OwnerReferences[0].UID == b.UID, nil
		})
	})

	t.Run("PodsOfAReplicaSet", func(t *testing.T) {
		rs, err := client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			_, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		rs.Finalizers = []string{metav1.FinalizerDeleteDependents}
		up, err := client.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(t, 5*time.Second, "the cache holds the replica set", func() (bool, error) {
			got, err := client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{ResourceVersion: "0"})
			return err == nil && got.ResourceVersion == up.ResourceVersion, err
		})
		fg := metav1.DeletePropagationForeground
		if err := client.AppsV1().ReplicaSets("default").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(t, 10*time.Second, "the replica set and its pods are deleted", func() (bool, error) {
			pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err
			}
			_, err = client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
			return len(pods.Items) == 0 && apierrors.IsNotFound(err), nil
		})
	})
}

func TestDependentsOfAnOwnerDeletedWhileStoppedAreCollectedAtStart(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	owner := configMap(ctx, t, client, "gone-owner")
	configMap(ctx, t, client, "left-1", ownerRef(owner, false))
	configMap(ctx, t, client, "left-2", ownerRef(owner, true))
	keeper := configMap(ctx, t, client, "keeper")
	configMap(ctx, t, client, "kept", ownerRef(keeper, true))
	deleteWith(ctx, t, client, "gone-owner", metav1.DeletePropagationBackground)

	runCollector(t, c)
	for _, name := range []string{"left-1", "left-2"} {
		clustertest.Eventually(t, 10*time.Second, name+" collected at start", configMapGone(ctx, client, name))
	}
	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("a dependent of a live owner: %v", err)
	}
}
