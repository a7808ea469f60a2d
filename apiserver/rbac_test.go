package apiserver

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// userClient is a client of replica i as user, in groups.
func (c *testCluster) userClient(i int, user string, groups ...string) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(c.restConfig(i, user, groups...))
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// eventually waits up to 10 s for f to succeed: roles and bindings reach
// each replica's authorizer through its watch cache, as in Kubernetes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	waitUntil(t, 10*time.Second, what, func() bool { return f() == nil })
}

func wantForbidden(t *testing.T, what string, err error, says string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusForbidden || !strings.Contains(status.Status().Message, says) {
		t.Errorf("%s: %v, want 403 saying %q", what, err, says)
	}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func userSubjects(names ...string) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

// TestRBACDecidesForUsers: a user who is neither an administrator nor a
// node gets what roles bound to them grant, on every replica, and no
// more; `kubectl auth can-i` answers the same.
func TestRBACDecidesForUsers(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	admin := c.client(0)
	alice := c.userClient(2, "alice", "dev")

	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The defaults: discovery and self reviews, nothing else.
	if _, err := alice.Discovery().ServerVersion(); err != nil {
		t.Errorf("version as a user with no roles: %v", err)
	}
	_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "listing pods with no roles", err, `User "alice" cannot list resource "pods" in API group "" in the namespace "team"`)
	_, err = alice.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	wantForbidden(t, "listing nodes with no roles", err, `cannot list resource "nodes" in API group "" at the cluster scope`)
	err = alice.CoreV1().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error()
	wantForbidden(t, "metrics with no roles", err, `cannot get path "/metrics"`)

	// edit in team, through the group.
	_, err = admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-edit"},
		RoleRef: clusterRoleRef("edit"), Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "dev"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice lists pods in team once bound to edit", func() error {
		_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := alice.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a config map with edit: %v", err)
	}
	_, err = alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "listing pods in another namespace", err, `in the namespace "default"`)
	_, err = alice.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		RoleRef: clusterRoleRef("view"), Subjects: userSubjects("mallory")}, metav1.CreateOptions{})
	wantForbidden(t, "edit binding roles", err, `cannot create resource "rolebindings"`)

	// can-i says the same, and why.
	canI := func(attrs authorizationv1.ResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		got, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	if st := canI(authorizationv1.ResourceAttributes{Verb: "delete", Group: "apps", Resource: "deployments", Namespace: "team"}); !st.Allowed ||
		!strings.Contains(st.Reason, `RoleBinding "dev-edit/team" of ClusterRole "edit" to Group "dev"`) {
		t.Errorf("can-i delete deployments in team: %+v", st)
	}
	if st := canI(authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "default"}); st.Allowed {
		t.Errorf("can-i list secrets in default: %+v", st)
	}
	rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rules.Status.ResourceRules {
		for _, res := range r.Resources {
			found = found || res == "secrets"
		}
	}
	if !found || len(rules.Status.NonResourceRules) == 0 {
		t.Errorf("can-i --list in team shows no secrets or no paths: %+v", rules.Status)
	}

	// A rule with resourceNames allows that object, by name and by a
	// watch of its name, and nothing else.
	bob := c.userClient(1, "bob")
	_, err = admin.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm1-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cm1"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-cm1"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm1-reader"}, Subjects: userSubjects("bob")}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob gets cm1", func() error {
		_, err := bob.CoreV1().ConfigMaps("team").Get(ctx, "cm1", metav1.GetOptions{})
		return err
	})
	w, err := bob.CoreV1().ConfigMaps("team").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=cm1"})
	if err != nil {
		t.Errorf("bob watching cm1 by name: %v", err)
	} else {
		w.Stop()
	}
	_, err = bob.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "bob listing every config map", err, "cannot list")
	_, err = bob.CoreV1().ConfigMaps("team").Get(ctx, "cm2", metav1.GetOptions{})
	wantForbidden(t, "bob getting another config map", err, "cannot get")

	// Removing the binding takes the rights away.
	if err := admin.RbacV1().RoleBindings("team").Delete(ctx, "dev-edit", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice loses edit", func() error {
		if _, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return errors.New("still allowed")
		}
		return nil
	})
}

// TestRBACRefusesEscalation: no one grants, by a role or a binding, more
// than they hold, unless given the verbs escalate or bind; nodes write
// no roles at all.
func TestRBACRefusesEscalation(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	admin := c.client(0)
	carol := c.userClient(0, "carol")
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(cs kubernetes.Interface, name string, ref rbacv1.RoleRef, who ...string) error {
		_, err := cs.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: userSubjects(who...)}, metav1.CreateOptions{})
		return err
	}
	if err := bind(admin, "carol-admin", clusterRoleRef("admin"), "carol"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "carol binds view in team", func() error { return bind(carol, "dave-view", clusterRoleRef("view"), "dave") })

	err := bind(carol, "dave-root", clusterRoleRef("cluster-admin"), "dave")
	wantForbidden(t, "admin binding cluster-admin in its namespace", err, "attempting to grant RBAC permissions not currently held")
	role := func(name string, rules ...rbacv1.PolicyRule) error {
		_, err := carol.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		return err
	}
	if err := role("pod-reader", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}); err != nil {
		t.Errorf("admin writing a role within its rights: %v", err)
	}
	err = role("everything", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	wantForbidden(t, "admin writing a role of wildcards", err, `in namespace "team": * *.*`)
	_, err = carol.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-root"},
		RoleRef: clusterRoleRef("cluster-admin"), Subjects: userSubjects("carol")}, metav1.CreateOptions{})
	wantForbidden(t, "admin of a namespace binding cluster-wide", err, `cannot create resource "clusterrolebindings"`)

	// The verbs escalate and bind lift the check, as in Kubernetes.
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "delegate"},
		Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}},
			{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bind(admin, "carol-delegate", clusterRoleRef("delegate"), "carol"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "carol, with escalate, writes a role of wildcards", func() error {
		return role("everything", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	})
	if err := bind(carol, "dave-root", clusterRoleRef("cluster-admin"), "dave"); err != nil {
		t.Errorf("carol, with bind on cluster-admin, binding it in team: %v", err)
	}

	// A node's credentials write no bindings.
	node := c.userClient(0, "system:node:n1", "system:nodes")
	_, err = node.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-root"},
		RoleRef: clusterRoleRef("cluster-admin"), Subjects: userSubjects("mallory")}, metav1.CreateOptions{})
	wantForbidden(t, "a node binding cluster-admin", err, "nodes may not write roles or bindings")
}

// TestDefaultRolesAreServed: every cluster starts with Kubernetes'
// default roles and bindings, the aggregated ones holding their rules.
func TestDefaultRolesAreServed(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	admin := c.client(0)
	eventually(t, "the default roles", func() error {
		for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"} {
			cr, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(cr.Rules) == 0 {
				return errors.New(name + " has no rules")
			}
		}
		crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if crb.Subjects[0].Name != "system:masters" {
			return errors.New("cluster-admin is not bound to system:masters")
		}
		return nil
	})
}
