package serviceaccounttoken

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
)

// TestTokenSecretsGoWithTheirServiceAccount runs the controller on a
// 3-replica API: deleting a service account deletes its token Secrets
// and no other Secret, and a Secret filled in for an account that was
// since replaced goes too.
func TestTokenSecretsGoWithTheirServiceAccount(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor()}})
	client := c.Client(1)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	accounts, secrets := client.CoreV1().ServiceAccounts("ci"), client.CoreV1().Secrets("ci")
	newAccount := func(name string) {
		t.Helper()
		if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newSecret := func(name, account string, typ corev1.SecretType) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: account}}, Type: typ}
		clustertest.Eventually(t, 10*time.Second, "creating secret "+name, func() (bool, error) {
			_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
			return err == nil, err
		})
	}
	gone := func(name string) func() (bool, error) {
		return func() (bool, error) {
			_, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	newAccount("robot")
	newAccount("keeper")
	newSecret("robot-token", "robot", corev1.SecretTypeServiceAccountToken)
	newSecret("keeper-token", "keeper", corev1.SecretTypeServiceAccountToken)
	// Same annotation, another type: not a token Secret, not ours.
	newSecret("robot-notes", "robot", corev1.SecretTypeOpaque)

	if err := accounts.Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "the deleted account's token Secret is deleted", gone("robot-token"))
	for _, name := range []string{"keeper-token", "robot-notes"} {
		if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("secret %s: %v, want it kept", name, err)
		}
	}

	// An account deleted and made again while the controller is not
	// looking (as in a restore): the Secret names the old uid.
	newSecret("keeper-token-2", "keeper", corev1.SecretTypeServiceAccountToken)
	if err := accounts.Delete(ctx, "keeper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	newAccount("keeper")
	clustertest.Eventually(t, 10*time.Second, "token Secrets of the earlier account are deleted", func() (bool, error) {
		a, err := gone("keeper-token")()
		b, err2 := gone("keeper-token-2")()
		if err == nil {
			err = err2
		}
		return a && b, err
	})
}
