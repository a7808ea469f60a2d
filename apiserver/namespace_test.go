package apiserver

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

func testConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
}

// finalizeNamespace does what the namespace controller does once a
// namespace is empty: it clears spec.finalizers through
// namespaces/finalize. (The controller lives elsewhere; tests stand in.)
// It retries what a store leader change interrupts; a namespace already
// gone was finalized by an interrupted try.
func finalizeNamespace(t *testing.T, cs kubernetes.Interface, name string) (out *corev1.Namespace) {
	t.Helper()
	retryTransient(t, func() error {
		ns, err := cs.CoreV1().Namespaces().Get(ctxT(t), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		ns.Spec.Finalizers = nil
		out, err = cs.CoreV1().Namespaces().Finalize(ctxT(t), ns, metav1.UpdateOptions{})
		return err
	})
	return out
}

// waitCreateForbidden waits until creating in namespace ns through cs is
// refused (an API server's namespace cache may lag a moment behind the
// delete) and returns the error.
func waitCreateForbidden(t *testing.T, cs kubernetes.Interface, ns string) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctxT(t), testConfigMap("late"), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		if err == nil {
			_ = cs.CoreV1().ConfigMaps(ns).Delete(ctxT(t), "late", metav1.DeleteOptions{})
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNamespaceLifecycle checks namespaces as Kubernetes has them: a
// DELETE marks them Terminating, nothing new can be created in them, and
// they go once their spec and metadata finalizers are both gone.
func TestNamespaceLifecycle(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.unthrottledClient(t, 0)
	nss := cs.CoreV1().Namespaces()
	createNamespace(t, c, "team")
	if _, err := cs.CoreV1().ConfigMaps("team").Create(ctx, testConfigMap("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("NewNamespaceIsActiveWithTheKubernetesFinalizer", func(t *testing.T) {
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
			t.Fatalf("phase %s finalizers %v", ns.Status.Phase, ns.Spec.Finalizers)
		}
	})

	t.Run("DeleteMarksItTerminating", func(t *testing.T) {
		for i := 0; i < 2; i++ { // a second DELETE changes nothing
			if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace gone while it has a finalizer: %v", err)
		}
		if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("deletionTimestamp %v phase %s", ns.DeletionTimestamp, ns.Status.Phase)
		}
	})

	t.Run("CreatingInItIs403", func(t *testing.T) {
		for i := range c.apis {
			err := waitCreateForbidden(t, c.client(i), "team")
			if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) ||
				!strings.Contains(err.Error(), "unable to create new content in namespace team because it is being terminated") {
				t.Fatalf("API server %d: create in a terminating namespace: %v", i, err)
			}
		}
	})

	t.Run("ExistingObjectsCanStillChange", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "before", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["k"] = "w"
		if _, err := cs.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("FinalizeKeepsTheStatus", func(t *testing.T) {
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.Status.Phase = corev1.NamespaceActive
		out, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{})
		if err != nil || out.Status.Phase != corev1.NamespaceTerminating || len(out.Spec.Finalizers) != 1 {
			t.Fatalf("finalize: %v %v", out, err)
		}
	})

	t.Run("FinalizeWithAStaleResourceVersionIs409", func(t *testing.T) {
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.ResourceVersion = "1"
		ns.Spec.Finalizers = nil
		if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("finalize: %v, want 409", err)
		}
	})

	t.Run("InvalidFinalizerIs422", func(t *testing.T) {
		ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.Spec.Finalizers = []corev1.FinalizerName{"not a finalizer"}
		if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("finalize: %v, want 422", err)
		}
	})

	t.Run("EmptyFinalizersRemoveIt", func(t *testing.T) {
		finalizeNamespace(t, cs, "team")
		if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after finalize: %v, want NotFound", err)
		}
	})

	t.Run("MetadataFinalizersHoldItToo", func(t *testing.T) {
		held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		retryTransient(t, func() error { return ignoreExists(nss.Create(ctx, held, metav1.CreateOptions{})) })
		retryTransient(t, func() error { return nss.Delete(ctx, "held", metav1.DeleteOptions{}) })
		finalizeNamespace(t, cs, "held")
		if ns, err := nss.Get(ctx, "held", metav1.GetOptions{}); err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("namespace with a metadata finalizer: %v %v", ns, err)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		retryTransient(t, func() error {
			_, err := nss.Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{})
			return ignoreNotFound(err)
		})
		if _, err := nss.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after the last finalizer: %v, want NotFound", err)
		}
	})

	t.Run("RemovingMetadataFinalizersLeavesSpecOnesHolding", func(t *testing.T) {
		held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held2", Finalizers: []string{"example.com/hold"}}}
		retryTransient(t, func() error { return ignoreExists(nss.Create(ctx, held, metav1.CreateOptions{})) })
		retryTransient(t, func() error { return nss.Delete(ctx, "held2", metav1.DeleteOptions{}) })
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		retryTransient(t, func() error {
			_, err := nss.Patch(ctx, "held2", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if ns, err := nss.Get(ctx, "held2", metav1.GetOptions{}); err != nil || len(ns.Spec.Finalizers) != 1 {
			t.Fatalf("namespace with the kubernetes finalizer left: %v %v", ns, err)
		}
		finalizeNamespace(t, cs, "held2")
		if _, err := nss.Get(ctx, "held2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after finalize: %v, want NotFound", err)
		}
	})

	t.Run("FinalizedActiveNamespaceGoesAtOnceOnDelete", func(t *testing.T) {
		createNamespace(t, c, "quick")
		ns := finalizeNamespace(t, cs, "quick")
		if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 0 {
			t.Fatalf("finalize of an active namespace: %+v", ns)
		}
		retryTransient(t, func() error { return ignoreNotFound(nss.Delete(ctx, "quick", metav1.DeleteOptions{})) })
		if _, err := nss.Get(ctx, "quick", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after delete: %v, want NotFound", err)
		}
	})

	for _, name := range immortalNamespaces() {
		t.Run("Deleting "+name+" is 403", func(t *testing.T) {
			waitNamespace(t, cs, name)
			err := nss.Delete(ctx, name, metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
				t.Fatalf("delete %s: %v, want 403", name, err)
			}
			if ns, err := nss.Get(ctx, name, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
				t.Fatalf("%s after a refused delete: %v %v", name, ns, err)
			}
		})
	}

	t.Run("DeleteCollectionIs405", func(t *testing.T) {
		// client-go has no call for it, as Kubernetes serves none.
		err := cs.CoreV1().RESTClient().Delete().Resource("namespaces").Do(ctx).Error()
		if !apierrors.IsMethodNotSupported(err) {
			t.Fatalf("deletecollection of namespaces: %v, want 405", err)
		}
	})

	t.Run("CreatingInAMissingNamespaceIs404", func(t *testing.T) {
		if _, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, testConfigMap("x"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("create in a missing namespace: %v, want 404", err)
		}
	})
}

// ignoreExists and ignoreNotFound let a retried create or delete succeed
// when an interrupted try did the job.
func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
