package rootcacert

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Every namespace, new or old, gets the cluster CA; an edited or deleted
// copy is put back.
func TestEveryNamespaceGetsTheClusterCA(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor()}})
	client := c.Client(1)
	ctx := context.Background()
	want := string(c.CA().CertPEM)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	published := func(ns string) func() (bool, error) {
		return func() (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Data[DataKey] == want && len(cm.Data) == 1, nil
		}
	}
	clustertest.Eventually(t, 10*time.Second, "the CA in a new namespace", published("team"))
	clustertest.Eventually(t, 10*time.Second, "the CA in kube-system", published("kube-system"))

	cm, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[DataKey] = "not a CA"
	if _, err := client.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "an edited copy put back", published("team"))
	if err := client.CoreV1().ConfigMaps("team").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "a deleted copy recreated", published("team"))
}

func TestCAOfNeedsACertificateAuthority(t *testing.T) {
	if _, err := caOf(&rest.Config{}); err == nil {
		t.Fatal("a config without a CA was accepted")
	}
	got, err := caOf(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("PEM")}})
	if err != nil || string(got) != "PEM" {
		t.Fatalf("caOf = %q, %v", got, err)
	}
}
