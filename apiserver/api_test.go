package apiserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}
}

func TestAPIWithClientGo(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("SystemNamespacesExist", func(t *testing.T) {
		for _, name := range systemNamespaces {
			var err error
			for i := 0; i < 100; i++ {
				if _, err = cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("namespace %s: %v", name, err)
			}
		}
	})

	t.Run("CreateGetDefaultsAndMetadata", func(t *testing.T) {
		p, err := cs.CoreV1().Pods("team").Create(ctx, testPod("a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.UID == "" || p.ResourceVersion == "" || p.CreationTimestamp.IsZero() {
			t.Fatalf("server metadata missing: %+v", p.ObjectMeta)
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyAlways || p.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
			t.Fatalf("defaults not applied: %+v", p.Spec)
		}
		got, err := c.client(1).CoreV1().Pods("team").Get(ctx, "a", metav1.GetOptions{})
		if err != nil || got.UID != p.UID {
			t.Fatalf("get via another API server: %v %v", got, err)
		}
		if _, err := cs.CoreV1().Pods("team").Create(ctx, testPod("a"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create: %v, want AlreadyExists", err)
		}
		gen := testPod("")
		gen.GenerateName = "web-"
		g, err := cs.CoreV1().Pods("team").Create(ctx, gen, metav1.CreateOptions{})
		if err != nil || len(g.Name) != len("web-")+5 {
			t.Fatalf("generateName: %v %v", g, err)
		}
	})

	t.Run("ValidationIs422WithCauses", func(t *testing.T) {
		bad := testPod("Bad_Name")
		bad.Spec.Containers[0].Image = ""
		_, err := cs.CoreV1().Pods("team").Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("invalid pod: %v, want 422", err)
		}
		if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Details == nil || len(st.Status().Details.Causes) == 0 {
			t.Fatalf("422 without field causes: %v", err)
		}
	})

	t.Run("StaleUpdateConflicts", func(t *testing.T) {
		p, _ := cs.CoreV1().Pods("team").Get(ctx, "a", metav1.GetOptions{})
		p.Labels["v"] = "1"
		if _, err := cs.CoreV1().Pods("team").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Labels["v"] = "2"
		if _, err := cs.CoreV1().Pods("team").Update(ctx, p, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("update with a stale resourceVersion: %v, want 409", err)
		}
	})

	t.Run("StrategicMergePatch", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"patched":"yes"}},"spec":{"containers":[{"name":"web","image":"web:2"}]}}`)
		p, err := cs.CoreV1().Pods("team").Patch(ctx, "a", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels["patched"] != "yes" || p.Spec.Containers[0].Image != "web:2" || p.Labels["app"] != "web" {
			t.Fatalf("after patch: %v %v", p.Labels, p.Spec.Containers)
		}
	})

	t.Run("ListSelectorsAndPagination", func(t *testing.T) {
		for i := 0; i < 7; i++ {
			p := testPod(fmt.Sprintf("page-%d", i))
			p.Labels = map[string]string{"page": "yes"}
			if _, err := cs.CoreV1().Pods("team").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		opts := metav1.ListOptions{LabelSelector: "page=yes", Limit: 3}
		for {
			l, err := cs.CoreV1().Pods("team").List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range l.Items {
				names = append(names, p.Name)
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
		if len(names) != 7 {
			t.Fatalf("paged list gave %v", names)
		}
		l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a"})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("field selector: %v %v", l, err)
		}
	})

	t.Run("WatchFromResourceVersionOnAnotherServer", func(t *testing.T) {
		l, err := cs.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.client(2).CoreV1().ConfigMaps("team").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"k": "v"}}
		if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("team").Delete(ctx, "cfg", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []watch.EventType{watch.Added, watch.Deleted} {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != want {
					t.Fatalf("event %v, want %v", ev.Type, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %v event", want)
			}
		}
	})

	t.Run("FinalizersHoldDeletion", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("team").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "held", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("object with a finalizer: %v %v, want it marked for deletion", got, err)
		}
		got.Finalizers = nil
		if _, err := cs.CoreV1().ConfigMaps("team").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after the last finalizer went: %v, want NotFound", err)
		}
	})

	t.Run("DeleteCollectionBySelector", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dc-%d", i), Labels: map[string]string{"dc": fmt.Sprint(i % 2)}}}
			if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		grace := int64(0)
		if err := cs.CoreV1().ConfigMaps("team").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{LabelSelector: "dc=0"}); err != nil {
			t.Fatal(err)
		}
		left, err := cs.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{LabelSelector: "dc"})
		if err != nil || len(left.Items) != 2 {
			t.Fatalf("after deleting dc=0: %d left (%v), want the 2 with dc=1", len(left.Items), err)
		}
	})

	t.Run("DryRunStoresNothing", func(t *testing.T) {
		if _, err := cs.CoreV1().Pods("team").Create(ctx, testPod("dry"), metav1.CreateOptions{DryRun: []string{"All"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods("team").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry-run create stored the object: %v", err)
		}
	})

	t.Run("CreateInMissingNamespaceIs404", func(t *testing.T) {
		if _, err := cs.CoreV1().Pods("nowhere").Create(ctx, testPod("x"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("create in a missing namespace: %v", err)
		}
	})
}
