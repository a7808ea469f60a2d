package apiserver

import (
	"testing"
	"time"

	"cairn/apiserver/storage"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	scaleclient "k8s.io/client-go/scale"
	kubectlscale "k8s.io/kubectl/pkg/scale"
	"k8s.io/utils/ptr"
)

func testPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}
}

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: testPodTemplate()},
	}
}

// createNamespace creates a namespace, retrying while a fresh cluster
// still elects its first leader, and waits until every API server's
// cache has it: creating objects in it checks the cache.
func createNamespace(t *testing.T, c *testCluster, name string) {
	t.Helper()
	ctx := ctxT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	var err error
	for i := 0; i < 50; i++ {
		_, err = c.client(0).CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, api := range c.apis {
		h := api.handlers[corev1.SchemeGroupVersion.WithResource("namespaces")]
		for i := 0; ; i++ {
			_, err := h.store.Get(ctx, h.key("", name), storage.GetOptions{ResourceVersion: "0"})
			if err == nil {
				break
			}
			if i == 100 {
				t.Fatalf("namespace %s not in an API server's cache: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestScaleSubresource drives the scale subresource the way kubectl and
// the autoscaler do: typed GetScale/UpdateScale and kubectl's own scaler,
// which patches the autoscaling/v1 Scale found through discovery.
func TestScaleSubresource(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	if _, err := cs.AppsV1().Deployments("team").Create(ctx, testDeployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("GetScaleReportsReplicasAndSelector", func(t *testing.T) {
		s, err := c.client(1).AppsV1().Deployments("team").GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Spec.Replicas != 1 || s.Status.Selector != "app=web" || s.Name != "web" || s.ResourceVersion == "" {
			t.Fatalf("scale: %+v", s)
		}
	})

	t.Run("UpdateScaleChangesOnlyReplicas", func(t *testing.T) {
		s, err := cs.AppsV1().Deployments("team").GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = 2
		out, err := cs.AppsV1().Deployments("team").UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.Replicas != 2 || out.APIVersion != "autoscaling/v1" && out.APIVersion != "" {
			t.Fatalf("scale after update: %+v", out)
		}
		d, err := cs.AppsV1().Deployments("team").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 2 || d.Generation != 2 || d.Spec.Template.Spec.Containers[0].Image != "web:1" {
			t.Fatalf("deployment after scale: replicas %d generation %d", *d.Spec.Replicas, d.Generation)
		}
		if _, err := cs.AppsV1().Deployments("team").UpdateScale(ctx, "web", s, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("scale update with a stale resourceVersion: %v, want 409", err)
		}
	})

	t.Run("NegativeReplicasIs422", func(t *testing.T) {
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}
		if _, err := cs.AppsV1().Deployments("team").UpdateScale(ctx, "web", s, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("replicas -1: %v, want 422", err)
		}
	})

	t.Run("KubectlScale", func(t *testing.T) {
		rc := c.restConfig(2, "admin", "system:masters")
		disc := memory.NewMemCacheClient(discoveryclient.NewDiscoveryClientForConfigOrDie(rc))
		sc, err := scaleclient.NewForConfig(rc, restmapper.NewDeferredDiscoveryRESTMapper(disc), dynamic.LegacyAPIPathResolverFunc,
			scaleclient.NewDiscoveryScaleKindResolver(disc))
		if err != nil {
			t.Fatal(err)
		}
		gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
		// kubectl scale deploy web --replicas=3
		if err := kubectlscale.NewScaler(sc).Scale("team", "web", 3, nil, nil, nil, nil, gvr, false); err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().Deployments("team").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != 3 {
			t.Fatalf("after kubectl scale: %v %v", d.Spec.Replicas, err)
		}
		// kubectl scale --current-replicas=3 --replicas=4 goes through Get and Update.
		if err := kubectlscale.NewScaler(sc).Scale("team", "web", 4, nil, &kubectlscale.ScalePrecondition{Size: 3}, nil, nil, gvr, false); err != nil {
			t.Fatal(err)
		}
		s, err := sc.Scales("team").Get(ctx, gvr.GroupResource(), "web", metav1.GetOptions{})
		if err != nil || s.Spec.Replicas != 4 {
			t.Fatalf("after a conditional scale: %v %v", s, err)
		}
	})

	t.Run("StrategicPatchOfScale", func(t *testing.T) {
		body := []byte(`{"spec":{"replicas":5}}`)
		res := cs.AppsV1().RESTClient().Patch(types.StrategicMergePatchType).Namespace("team").Resource("deployments").Name("web").SubResource("scale").Body(body).Do(ctx)
		s := &autoscalingv1.Scale{}
		if err := res.Into(s); err != nil || s.Spec.Replicas != 5 {
			t.Fatalf("patched scale: %+v %v", s, err)
		}
	})

	t.Run("ReplicaSetsAndStatefulSets", func(t *testing.T) {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: testPodTemplate()}}
		if _, err := cs.AppsV1().ReplicaSets("team").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: testPodTemplate()}}
		if _, err := cs.AppsV1().StatefulSets("team").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "team"}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
		if s, err := cs.AppsV1().ReplicaSets("team").UpdateScale(ctx, "rs", scale, metav1.UpdateOptions{}); err != nil || s.Spec.Replicas != 7 {
			t.Fatalf("replica set scale: %v %v", s, err)
		}
		scale.Name = "db"
		if s, err := cs.AppsV1().StatefulSets("team").UpdateScale(ctx, "db", scale, metav1.UpdateOptions{}); err != nil || s.Spec.Replicas != 7 {
			t.Fatalf("stateful set scale: %v %v", s, err)
		}
		if got, err := cs.AppsV1().StatefulSets("team").Get(ctx, "db", metav1.GetOptions{}); err != nil || *got.Spec.Replicas != 7 {
			t.Fatalf("stateful set after scale: %v", err)
		}
	})

	t.Run("MissingObjectIs404", func(t *testing.T) {
		if _, err := cs.AppsV1().Deployments("team").GetScale(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("scale of a missing deployment: %v", err)
		}
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "nope"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
		if _, err := cs.AppsV1().Deployments("team").UpdateScale(ctx, "nope", scale, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("scaling a missing deployment: %v", err)
		}
	})

	t.Run("DaemonSetsHaveNoScale", func(t *testing.T) {
		err := cs.AppsV1().RESTClient().Get().Namespace("team").Resource("daemonsets").Name("x").SubResource("scale").Do(ctx).Error()
		if !apierrors.IsNotFound(err) {
			t.Fatalf("daemonsets/scale: %v, want 404", err)
		}
	})
}
