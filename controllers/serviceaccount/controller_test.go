package serviceaccount

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSyncCreatesOnlyMissingDefaultAccounts(t *testing.T) {
	now := metav1.Now()
	ns := func(name string, phase corev1.NamespacePhase, deleted bool) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
		if deleted {
			n.DeletionTimestamp = &now
		}
		return n
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: "has"}}
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		ns      string
		created bool
	}{
		{"active namespace gets one", []runtime.Object{ns("a", corev1.NamespaceActive, false)}, "a", true},
		{"existing account is kept", []runtime.Object{ns("has", corev1.NamespaceActive, false), sa}, "has", false},
		{"terminating namespace gets none", []runtime.Object{ns("t", corev1.NamespaceTerminating, true)}, "t", false},
		{"missing namespace gets none", nil, "gone", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, client := clustertest.FakeContext(t, controllers.DefaultOptions(), nil, tc.objs...)
			c, err := New(cc)
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			if err := c.sync(context.Background(), tc.ns); err != nil {
				t.Fatal(err)
			}
			creates := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" && a.GetResource().Resource == "serviceaccounts" {
					creates++
				}
			}
			if got := creates == 1; got != tc.created {
				t.Errorf("created = %d service accounts, want created=%v", creates, tc.created)
			}
		})
	}
}

func TestNewNamespaceGetsDefaultServiceAccount(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor()}})
	client := c.Client(1)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	present := func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("team").Get(ctx, DefaultName, metav1.GetOptions{})
		return err == nil, err
	}
	clustertest.Eventually(t, 10*time.Second, "default service account in a new namespace", present)
	if err := client.CoreV1().ServiceAccounts("team").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "deleted default service account recreated", present)
	clustertest.Eventually(t, 10*time.Second, "default service account in kube-system", func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, DefaultName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		return err == nil, err
	})
}
