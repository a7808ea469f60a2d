package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/apiserver/serviceaccount"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tokenClient is a client of replica i that authenticates with a bearer
// token only.
func (c *testCluster) tokenClient(i int, token string) kubernetes.Interface {
	rc := c.restConfig(i, "unused")
	rc = &rest.Config{Host: rc.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: rc.TLSClientConfig.CAData, CAFile: rc.TLSClientConfig.CAFile}}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

func wantStatus(t *testing.T, what string, err error, code int32) {
	t.Helper()
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != code {
		t.Errorf("%s: %v, want %d", what, err, code)
	}
}

// TestServiceAccountTokens: a token one replica mints (as `kubectl create
// token` asks for it) identifies the service account on another, RBAC
// decides what it may do, and it dies with its service account or the
// pod it is bound to.
func TestServiceAccountTokens(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	admin := c.client(0)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := admin.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	life := int64(1200)
	tr, err := admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &life}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status.Token == "" || *tr.Spec.ExpirationSeconds != life || len(tr.Spec.Audiences) == 0 {
		t.Fatalf("token request answered %+v", tr)
	}

	robot := c.tokenClient(2, tr.Status.Token)
	var who *authenticationv1.SelfSubjectReview
	eventually(t, "the token is accepted on another replica", func() error {
		who, err = robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	})
	u := who.Status.UserInfo
	if u.Username != "system:serviceaccount:team:robot" || u.UID != string(sa.UID) ||
		!slices.Contains(u.Groups, "system:serviceaccounts") || !slices.Contains(u.Groups, "system:serviceaccounts:team") || !slices.Contains(u.Groups, "system:authenticated") {
		t.Errorf("whoami with the token: %+v", u)
	}
	// A client certificate wins over a token, as in Kubernetes.
	both := c.restConfig(1, "admin", "system:masters")
	both.BearerToken = tr.Status.Token
	bothClient, err := kubernetes.NewForConfig(both)
	if err != nil {
		t.Fatal(err)
	}
	if who, err := bothClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err != nil || who.Status.UserInfo.Username != "admin" {
		t.Errorf("whoami with a certificate and a token: %v, %v", who, err)
	}
	checkIssuerDiscovery(t, robot, tr.Status.Token)
	err = c.userClient(0, "alice").CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").Do(ctx).Error()
	wantForbidden(t, "the key set as a user who is no service account", err, `cannot get path "/openid/v1/jwks"`)

	_, err = robot.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "listing pods without a role", err, `User "system:serviceaccount:team:robot" cannot list resource "pods"`)
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "robot-view"},
		RoleRef:  clusterRoleRef("view"),
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "robot"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service account lists pods once bound to view", func() error {
		_, err := robot.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})

	// Bad requests.
	short := int64(60)
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}}, metav1.CreateOptions{})
	wantStatus(t, "a 60 s token", err, http.StatusBadRequest)
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	wantStatus(t, "a token of a missing service account", err, http.StatusNotFound)
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "missing"}}}, metav1.CreateOptions{})
	wantStatus(t, "a token bound to a missing pod", err, http.StatusBadRequest)

	// A token bound to a pod dies with the pod.
	pod, err := admin.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boundClient := c.tokenClient(1, bound.Status.Token)
	eventually(t, "the pod-bound token works", func() error {
		_, err := boundClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})

	// Nodes mint tokens only for their own pods.
	n1, n2 := c.userClient(0, "system:node:n1", "system:nodes"), c.userClient(0, "system:node:n2", "system:nodes")
	podRef := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}
	if _, err := n1.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: podRef}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("the pod's node asking for its token: %v", err)
	}
	_, err = n2.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: podRef}}, metav1.CreateOptions{})
	wantStatus(t, "another node asking for the pod's token", err, http.StatusForbidden)
	_, err = n1.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	wantStatus(t, "a node asking for an unbound token", err, http.StatusForbidden)

	zero := int64(0)
	if err := admin.CoreV1().Pods("team").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod-bound token is refused once the pod is gone", func() error {
		_, err := boundClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			return errNotYet
		}
		return nil
	})

	// A token bound to a Secret (kubectl create token
	// --bound-object-kind Secret) dies with the Secret.
	session, err := admin.CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "session"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "session", UID: "not-its-uid"}}}, metav1.CreateOptions{})
	wantStatus(t, "a token bound to another incarnation of a secret", err, http.StatusConflict)
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "session"}}}, metav1.CreateOptions{})
	wantStatus(t, "a token bound to a config map", err, http.StatusBadRequest)
	secretBound, err := admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "session", UID: session.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secretClient := c.tokenClient(2, secretBound.Status.Token)
	eventually(t, "the secret-bound token works", func() error {
		_, err := secretClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})
	if err := admin.CoreV1().Secrets("team").Delete(ctx, "session", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the secret-bound token is refused once the secret is gone", func() error {
		_, err := secretClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			return errNotYet
		}
		return nil
	})

	// A token bound to a node (--bound-object-kind Node) dies with the
	// node.
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n9"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeBound, err := admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n9", UID: node.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeClient := c.tokenClient(1, nodeBound.Status.Token)
	eventually(t, "the node-bound token works", func() error {
		_, err := nodeClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})
	if err := admin.CoreV1().Nodes().Delete(ctx, "n9", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node-bound token is refused once the node is gone", func() error {
		_, err := nodeClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			return errNotYet
		}
		return nil
	})
	_, err = admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n9"}}}, metav1.CreateOptions{})
	wantStatus(t, "a token bound to a missing node", err, http.StatusBadRequest)

	// Every token dies with its service account.
	if err := admin.CoreV1().ServiceAccounts("team").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the token is refused once its service account is gone", func() error {
		_, err := robot.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			return errNotYet
		}
		return nil
	})
}

var errNotYet = errors.New("not yet")

// checkIssuerDiscovery reads the OpenID configuration and key set as a
// service account, and verifies token with the published key, as a
// verifier outside the cluster would.
func checkIssuerDiscovery(t *testing.T, cs kubernetes.Interface, token string) {
	t.Helper()
	ctx := ctxT(t)
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		t.Fatalf("openid-configuration: %v", err)
	}
	var conf struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Issuer != serviceaccount.DefaultIssuer || !strings.HasSuffix(conf.JWKSURI, "/openid/v1/jwks") || !slices.Equal(conf.Algs, []string{"ES256"}) {
		t.Errorf("openid-configuration: %s", raw)
	}
	raw, err = cs.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	if err != nil {
		t.Fatalf("jwks: %v", err)
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &keys); err != nil || len(keys.Keys) != 1 {
		t.Fatalf("jwks %s: %v", raw, err)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.Claims
	if err := tok.Claims(keys.Keys[0].Key, &claims); err != nil {
		t.Errorf("the published key does not verify a token: %v", err)
	}
	if claims.Issuer != conf.Issuer {
		t.Errorf("token issuer %q, discovery says %q", claims.Issuer, conf.Issuer)
	}
}

// TestServiceAccountTokenSecrets: a Secret of type
// kubernetes.io/service-account-token comes back filled in (token,
// ca.crt, namespace, the account's uid); its token identifies the
// account on every replica until the Secret or the account goes.
func TestServiceAccountTokenSecrets(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	admin := c.client(0)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := admin.CoreV1().Secrets("ci")
	tokenSecret := func(name, account string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: account}},
			Type: corev1.SecretTypeServiceAccountToken}
	}

	// The account must exist first.
	_, err := secrets.Create(ctx, tokenSecret("early", "builder"), metav1.CreateOptions{})
	wantStatus(t, "a token Secret of a missing service account", err, http.StatusUnprocessableEntity)
	if err == nil || !strings.Contains(err.Error(), "create it before its token Secret") {
		t.Errorf("the refusal does not say what to do: %v", err)
	}
	sa, err := admin.CoreV1().ServiceAccounts("ci").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var secret *corev1.Secret
	eventually(t, "a token Secret of the new account is filled in", func() error {
		secret, err = secrets.Create(ctx, tokenSecret("builder-token", "builder"), metav1.CreateOptions{})
		return err
	})
	token := string(secret.Data[corev1.ServiceAccountTokenKey])
	if token == "" || string(secret.Data[corev1.ServiceAccountNamespaceKey]) != "ci" ||
		!strings.Contains(string(secret.Data[corev1.ServiceAccountRootCAKey]), "BEGIN CERTIFICATE") ||
		secret.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Fatalf("the stored Secret: annotations %v, keys %v", secret.Annotations, slices.Sorted(maps.Keys(secret.Data)))
	}
	for i := range 3 {
		var who *authenticationv1.SelfSubjectReview
		eventually(t, "the Secret's token is accepted", func() error {
			who, err = c.tokenClient(i, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		})
		if u := who.Status.UserInfo; u.Username != "system:serviceaccount:ci:builder" || u.UID != string(sa.UID) {
			t.Errorf("replica %d: whoami with the Secret's token: %+v", i, u)
		}
	}

	// The API servers record the day of the token's last use, and a
	// token whose Secret is marked invalid no longer works.
	eventually(t, "the Secret records the token's use", func() error {
		s, err := secrets.Get(ctx, "builder-token", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, today := s.Labels[serviceaccount.LabelLegacyTokenLastUsed], time.Now().UTC().Format(time.DateOnly); got != today {
			return fmt.Errorf("label %s=%q, want %s", serviceaccount.LabelLegacyTokenLastUsed, got, today)
		}
		secret = s
		return nil
	})
	invalidate := func(on bool) {
		t.Helper()
		s, err := secrets.Get(ctx, "builder-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if on {
			s.Labels[serviceaccount.LabelLegacyTokenInvalidSince] = "2026-01-01"
		} else {
			delete(s.Labels, serviceaccount.LabelLegacyTokenInvalidSince)
		}
		if secret, err = secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	invalidate(true)
	eventually(t, "a token marked invalid is refused", func() error {
		_, err := c.tokenClient(2, token).CoreV1().Namespaces().Get(ctx, "ci", metav1.GetOptions{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the token marked invalid: %v, want 401", err)
		}
		return nil
	})
	invalidate(false)
	eventually(t, "the token works again once the label is gone", func() error {
		_, err := c.tokenClient(2, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	})

	// An update that drops the token gets a new one; the old one is
	// revoked.
	secret.Data = map[string][]byte{"note": []byte("rotate")}
	rotated, err := secrets.Update(ctx, secret, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := string(rotated.Data[corev1.ServiceAccountTokenKey])
	if fresh == "" || fresh == token || len(rotated.Data[corev1.ServiceAccountRootCAKey]) == 0 {
		t.Fatalf("after an update without the token: keys %v", slices.Sorted(maps.Keys(rotated.Data)))
	}
	eventually(t, "the replaced token is refused", func() error {
		_, err := c.tokenClient(1, token).CoreV1().Namespaces().Get(ctx, "ci", metav1.GetOptions{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the old token: %v, want 401", err)
		}
		return nil
	})

	// A Secret naming an account's earlier incarnation is refused.
	stale := tokenSecret("stale-token", "builder")
	stale.Annotations[corev1.ServiceAccountUIDKey] = "0000-old"
	_, err = secrets.Create(ctx, stale, metav1.CreateOptions{})
	wantStatus(t, "a token Secret of another incarnation of the account", err, http.StatusUnprocessableEntity)

	// Deleting the Secret revokes its token.
	if err := secrets.Delete(ctx, "builder-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		eventually(t, "the deleted Secret's token is refused", func() error {
			_, err := c.tokenClient(i, fresh).CoreV1().Namespaces().Get(ctx, "ci", metav1.GetOptions{})
			if !apierrors.IsUnauthorized(err) {
				return fmt.Errorf("replica %d: %v, want 401", i, err)
			}
			return nil
		})
	}
}
