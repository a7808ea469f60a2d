package apiserver

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestSelfReviewsAnswerWhatTheServerEnforces: `kubectl auth whoami` and
// `kubectl auth can-i` get answers, and the answers are the API server's
// own rules: a node may read pods but not exec into them.
func TestSelfReviewsAnswerWhatTheServerEnforces(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	admin := c.client(0)
	node, err := kubernetes.NewForConfig(c.restConfig(0, "system:node:n1", "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}

	who, err := node.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo; u.Username != "system:node:n1" || !slices.Contains(u.Groups, "system:nodes") || !slices.Contains(u.Groups, "system:authenticated") {
		t.Errorf("whoami as a node: %+v", u)
	}

	canI := func(cs kubernetes.Interface, attrs *authorizationv1.ResourceAttributes, path string) *authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
		if path != "" {
			review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: "get", Path: path}
		}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return &got.Status
	}
	execPods := &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "default"}
	for _, tt := range []struct {
		who     string
		cs      kubernetes.Interface
		attrs   *authorizationv1.ResourceAttributes
		path    string
		allowed bool
	}{
		{"admin", admin, execPods, "", true},
		{"node", node, execPods, "", false},
		{"node", node, &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "portforward"}, "", false},
		{"node", node, &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, "", true},
		{"node", node, &authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes", Subresource: "status", Name: "n1"}, "", true},
		{"node", node, nil, "/version", true},
	} {
		st := canI(tt.cs, tt.attrs, tt.path)
		if st.Allowed != tt.allowed || st.Denied == tt.allowed || st.Reason == "" {
			t.Errorf("can %s %+v %s: %+v, want allowed %v with a reason", tt.who, tt.attrs, tt.path, st, tt.allowed)
		}
	}
	if st := canI(node, execPods, ""); !strings.Contains(st.Reason, "nodes may not use pods/exec") {
		t.Errorf("a node's exec is refused for %q", st.Reason)
	}

	// Exactly one kind of attributes.
	_, err = admin.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
		t.Errorf("an access review of nothing: %v, want 422", err)
	}

	rules := func(cs kubernetes.Interface) authorizationv1.SubjectRulesReviewStatus {
		t.Helper()
		got, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	if st := rules(admin); st.Incomplete || len(st.ResourceRules) != 1 || !slices.Equal(st.ResourceRules[0].Verbs, []string{"*"}) {
		t.Errorf("the admin's rules: %+v", st)
	}
	if st := rules(node); !st.Incomplete || !strings.Contains(st.EvaluationError, "exec") {
		t.Errorf("a node's rules must say they leave out its exceptions: %+v", st)
	}

	// Discovery lists the reviews with their one verb, as kubectl
	// api-resources shows them.
	for _, gvr := range []struct{ gv, name string }{
		{"authentication.k8s.io/v1", "selfsubjectreviews"},
		{"authorization.k8s.io/v1", "selfsubjectaccessreviews"},
		{"authorization.k8s.io/v1", "selfsubjectrulesreviews"},
	} {
		list, err := admin.Discovery().ServerResourcesForGroupVersion(gvr.gv)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.name })
		if i < 0 || !slices.Equal(list.APIResources[i].Verbs, []string{"create"}) {
			t.Errorf("discovery of %s: %+v", gvr.gv, list.APIResources)
		}
	}

	// Reviews are answered, not stored: nothing else is served.
	err = admin.AuthorizationV1().RESTClient().Get().Resource("selfsubjectaccessreviews").Do(ctx).Error()
	if !errors.As(err, &status) || status.Status().Code != http.StatusMethodNotAllowed {
		t.Errorf("listing access reviews: %v, want 405", err)
	}
}

// TestImpersonationIsForAdministrators: `kubectl --as jane --as-group dev`
// acts as jane for an administrator, and is refused, never ignored, for
// nodes and for users RBAC does not let impersonate.
func TestImpersonationIsForAdministrators(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	whoami := func(cfg *rest.Config) (*authenticationv1.SelfSubjectReview, error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}
	admin := c.restConfig(0, "admin", "system:masters")
	admin.Impersonate = rest.ImpersonationConfig{UserName: "jane", Groups: []string{"dev"}, UID: "42"}
	got, err := whoami(admin)
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Status.UserInfo; u.Username != "jane" || u.UID != "42" || !slices.Equal(u.Groups, []string{"dev", "system:authenticated"}) {
		t.Errorf("an administrator acting as jane: %+v", u)
	}

	var status apierrors.APIStatus
	for _, who := range []struct{ user, group string }{{"system:node:n1", "system:nodes"}, {"jane", "dev"}} {
		cfg := c.restConfig(0, who.user, who.group)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
		_, err := whoami(cfg)
		if !errors.As(err, &status) || status.Status().Code != http.StatusForbidden || !strings.Contains(status.Status().Message, "impersonate") {
			t.Errorf("%s acting as an administrator: %v, want 403", who.user, err)
		}
	}

	groupOnly := c.restConfig(0, "admin", "system:masters")
	groupOnly.Impersonate = rest.ImpersonationConfig{Groups: []string{"dev"}}
	if _, err := whoami(groupOnly); !errors.As(err, &status) || status.Status().Code != http.StatusBadRequest {
		t.Errorf("impersonating a group without a user: %v, want 400", err)
	}
}
