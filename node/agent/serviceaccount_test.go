package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn/node/agent"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPodsGetServiceAccountCredentials: a pod finds its service account's
// token, the cluster CA and its namespace where client-go's in-cluster
// configuration looks, with either runtime; the token identifies the
// service account to the API and dies with the pod.
func TestPodsGetServiceAccountCredentials(t *testing.T) {
	for _, rt := range []struct {
		name   string
		config func(testing.TB) agent.Config
	}{{"embedded", embeddedConfig}, {"cri", containerdConfig}} {
		t.Run(rt.name, func(t *testing.T) {
			n := startTestNode(t, rt.config(t), 1)
			const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
			n.create(t, n.pod("sa", corev1.Container{Name: "c", Command: []string{"sh", "-c",
				"cat " + dir + "/namespace; echo; echo ==cut==; cat " + dir + "/ca.crt; echo ==cut==; cat " + dir + "/token; echo; echo ==cut==; sleep 3600"}}))
			n.waitPod(t, "sa", 30*time.Second, "running", running)
			var parts []string
			eventually(t, 10*time.Second, "the pod prints its credentials", func() bool {
				out, err := n.logs("sa", &corev1.PodLogOptions{})
				parts = strings.Split(out, "==cut==\n")
				return err == nil && len(parts) == 4
			}, func() any { return parts })
			if ns := strings.TrimSpace(parts[0]); ns != "default" {
				t.Errorf("namespace file: %q", ns)
			}
			if ca := strings.TrimSpace(parts[1]); ca != strings.TrimSpace(string(n.cluster.CA().CertPEM)) {
				t.Errorf("ca.crt is not the cluster CA:\n%s", ca)
			}
			token := strings.TrimSpace(parts[2])
			client := bearerClient(t, n, token)
			who, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("whoami with the pod's token: %v", err)
			}
			if u := who.Status.UserInfo.Username; u != "system:serviceaccount:default:default" {
				t.Errorf("the pod's token identifies %q", u)
			}

			n.delete(t, "sa", 0)
			n.waitGone(t, "sa", 30*time.Second)
			eventually(t, 10*time.Second, "the token refused once the pod is gone", func() bool {
				_, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
				return apierrors.IsUnauthorized(err)
			}, func() any { return nil })
		})
	}
}

// bearerClient is a client of the node's first API server that presents
// only token.
func bearerClient(t *testing.T, n *testNode, token string) kubernetes.Interface {
	admin := n.cluster.AdminConfig(0)
	cfg := &rest.Config{Host: admin.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.TLSClientConfig.CAData, CAFile: admin.TLSClientConfig.CAFile}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
