package authz

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRuleAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule rbacv1.PolicyRule
		req  Request
		want bool
	}{
		{"exact", rule([]string{"get"}, core, "pods"), Request{Verb: "get", Resource: "pods"}, true},
		{"other verb", rule([]string{"get"}, core, "pods"), Request{Verb: "delete", Resource: "pods"}, false},
		{"other group", rule([]string{"get"}, apps, "pods"), Request{Verb: "get", Resource: "pods"}, false},
		{"wildcards", rule([]string{"*"}, []string{"*"}, "*"), Request{Verb: "patch", Group: "apps", Resource: "deployments", Subresource: "scale"}, true},
		{"resource is not its subresource", rule([]string{"get"}, core, "pods"), Request{Verb: "get", Resource: "pods", Subresource: "log"}, false},
		{"subresource", rule([]string{"get"}, core, "pods/log"), Request{Verb: "get", Resource: "pods", Subresource: "log"}, true},
		{"any resource's subresource", rule([]string{"update"}, apps, "*/scale"), Request{Verb: "update", Group: "apps", Resource: "statefulsets", Subresource: "scale"}, true},
		{"named", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: core, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			Request{Verb: "get", Resource: "configmaps", Name: "a"}, true},
		{"named, other name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: core, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			Request{Verb: "get", Resource: "configmaps", Name: "b"}, false},
		{"named, list", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: core, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			Request{Verb: "list", Resource: "configmaps"}, false},
		{"path", urls([]string{"get"}, "/version"), Request{Verb: "get", Path: "/version"}, true},
		{"path prefix", urls([]string{"get"}, "/apis/*"), Request{Verb: "get", Path: "/apis/apps/v1"}, true},
		{"path prefix is not the parent", urls([]string{"get"}, "/apis/*"), Request{Verb: "get", Path: "/apis"}, false},
		{"resource rule, path request", rule([]string{"*"}, []string{"*"}, "*"), Request{Verb: "get", Path: "/version"}, false},
		{"path rule, resource request", urls([]string{"*"}, "*"), Request{Verb: "get", Resource: "pods"}, false},
	} {
		if got := ruleAllows(&tc.rule, tc.req); got != tc.want {
			t.Errorf("%s: ruleAllows(%+v, %+v) = %v, want %v", tc.name, tc.rule, tc.req, got, tc.want)
		}
	}
}

// defaultPolicy is the default roles and bindings, and extra objects.
func defaultPolicy(extra ...any) *Policy {
	crs, crbs := DefaultClusterRoles(), DefaultClusterRoleBindings()
	var roles []*rbacv1.Role
	var rbs []*rbacv1.RoleBinding
	for _, o := range extra {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			crs = append(crs, o)
		case *rbacv1.ClusterRoleBinding:
			crbs = append(crbs, o)
		case *rbacv1.Role:
			roles = append(roles, o)
		case *rbacv1.RoleBinding:
			rbs = append(rbs, o)
		}
	}
	return NewPolicy(crs, roles, crbs, rbs)
}

func roleBinding(ns, name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: ref, Subjects: subjects}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

var (
	alice = User{Name: "alice", Groups: []string{"dev", GroupAuthenticated}}
	bob   = User{Name: "bob", Groups: []string{GroupAuthenticated}}
)

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func TestDefaults(t *testing.T) {
	p := defaultPolicy()
	admin := User{Name: "admin", Groups: []string{GroupMasters, GroupAuthenticated}}
	for _, tc := range []struct {
		u    User
		req  Request
		want bool
	}{
		{admin, Request{Verb: "delete", Resource: "nodes", Name: "n1"}, true},
		{admin, Request{Verb: "get", Path: "/metrics"}, true},
		{bob, Request{Verb: "get", Path: "/version"}, true},
		{bob, Request{Verb: "get", Path: "/apis/apps/v1"}, true},
		{bob, Request{Verb: "get", Path: "/metrics"}, false},
		{bob, Request{Verb: "create", Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, true},
		{bob, Request{Verb: "list", Namespace: "default", Resource: "pods"}, false},
		{bob, Request{Verb: "list", Resource: "namespaces"}, false},
		{User{Name: "prometheus", Groups: []string{GroupMonitoring}}, Request{Verb: "get", Path: "/metrics"}, true},
		{User{Name: SchedulerUser}, Request{Verb: "create", Namespace: "default", Resource: "pods", Subresource: "binding", Name: "p"}, true},
		{User{Name: SchedulerUser}, Request{Verb: "update", Namespace: "kube-system", Group: "coordination.k8s.io", Resource: "leases", Name: "cairn-scheduler"}, true},
		{User{Name: SchedulerUser}, Request{Verb: "list", Namespace: "default", Resource: "secrets"}, false},
		{User{Name: ControllerManagerUser}, Request{Verb: "create", Namespace: "default", Group: "apps", Resource: "replicasets"}, true},
		{User{Name: ControllerManagerUser}, Request{Verb: "get", Path: "/metrics"}, false},
	} {
		if got, _ := p.Authorize(tc.u, tc.req); got != tc.want {
			t.Errorf("%s: %+v: allowed %v, want %v", tc.u.Name, tc.req, got, tc.want)
		}
	}
}

func TestBindingsGrantOnlyWhereTheyAre(t *testing.T) {
	p := defaultPolicy(
		roleBinding("team", "alice-edit", clusterRoleRef("edit"), userSubject("alice")),
		roleBinding("team", "dev-view", clusterRoleRef("view"), rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "dev"}),
		roleBinding("other", "bob-view", clusterRoleRef("view"), userSubject("bob")),
	)
	for _, tc := range []struct {
		u      User
		req    Request
		want   bool
		reason string
	}{
		{alice, Request{Verb: "create", Namespace: "team", Group: "apps", Resource: "deployments"}, true,
			`RBAC: allowed by RoleBinding "alice-edit/team" of ClusterRole "edit" to User "alice"`},
		{alice, Request{Verb: "get", Namespace: "team", Resource: "secrets", Name: "s"}, true, ""},
		{alice, Request{Verb: "create", Namespace: "team", Group: rbacv1.GroupName, Resource: "rolebindings"}, false, ""},
		{alice, Request{Verb: "create", Namespace: "other", Group: "apps", Resource: "deployments"}, false, ""},
		{alice, Request{Verb: "list", Group: "apps", Resource: "deployments"}, false, ""},
		{alice, Request{Verb: "list", Resource: "nodes"}, false, ""},
		{bob, Request{Verb: "list", Namespace: "other", Resource: "pods"}, true, ""},
		{bob, Request{Verb: "get", Namespace: "other", Resource: "secrets", Name: "s"}, false, ""},
		{bob, Request{Verb: "delete", Namespace: "other", Resource: "pods", Name: "p"}, false, ""},
	} {
		got, reason := p.Authorize(tc.u, tc.req)
		if got != tc.want || (tc.reason != "" && reason != tc.reason) {
			t.Errorf("%s: %+v: allowed %v (%q), want %v (%q)", tc.u.Name, tc.req, got, reason, tc.want, tc.reason)
		}
	}
}

func TestServiceAccountSubjects(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "cm-reader"},
		Rules: []rbacv1.PolicyRule{rule(read, core, "configmaps")}}
	p := defaultPolicy(role,
		// No namespace: the binding's.
		roleBinding("ci", "builder", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}),
	)
	sa := User{Name: ServiceAccountUsername("ci", "builder"), Groups: []string{"system:serviceaccounts", GroupAuthenticated}}
	ok, reason := p.Authorize(sa, Request{Verb: "list", Namespace: "ci", Resource: "configmaps"})
	if !ok || !strings.Contains(reason, `ServiceAccount "ci/builder"`) {
		t.Errorf("service account: allowed %v (%q)", ok, reason)
	}
	other := User{Name: ServiceAccountUsername("prod", "builder")}
	if ok, _ := p.Authorize(other, Request{Verb: "list", Namespace: "ci", Resource: "configmaps"}); ok {
		t.Error("a service account of the same name in another namespace is allowed")
	}
}

func TestAggregation(t *testing.T) {
	crd := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{aggregateToView: "true"}},
		Rules:      []rbacv1.PolicyRule{rule(read, []string{"example.com"}, "widgets")},
	}
	p := defaultPolicy(crd, roleBinding("team", "admin", clusterRoleRef("admin"), userSubject("alice")))
	// view aggregates to edit, and edit to admin: a rule added to view
	// reaches admin.
	req := Request{Verb: "list", Namespace: "team", Group: "example.com", Resource: "widgets"}
	if ok, _ := p.Authorize(alice, req); !ok {
		t.Error("admin did not aggregate a role labelled aggregate-to-view")
	}
	if ok, _ := defaultPolicy(roleBinding("team", "admin", clusterRoleRef("admin"), userSubject("alice"))).Authorize(alice, req); ok {
		t.Error("admin allows widgets with no role granting them")
	}
	// A selector matching the role itself (or a cycle) ends.
	loop := &rbacv1.ClusterRole{
		ObjectMeta:      metav1.ObjectMeta{Name: "loop", Labels: map[string]string{"loop": "true"}},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"loop": "true"}}}},
	}
	defaultPolicy(loop)
}

func TestDefaultRolesAreStoredAggregated(t *testing.T) {
	for _, cr := range DefaultClusterRoles() {
		if cr.Name != "admin" {
			continue
		}
		have := NewPolicy([]*rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Rules: cr.Rules}}, nil,
			[]*rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "x"}, RoleRef: clusterRoleRef("x"), Subjects: []rbacv1.Subject{userSubject("alice")}}}, nil)
		for _, req := range []Request{
			{Verb: "get", Namespace: "a", Resource: "pods"},                              // view
			{Verb: "create", Namespace: "a", Resource: "secrets"},                        // edit
			{Verb: "create", Namespace: "a", Group: rbacv1.GroupName, Resource: "roles"}, // admin
		} {
			if ok, _ := have.Authorize(alice, req); !ok {
				t.Errorf("the stored rules of admin do not allow %+v", req)
			}
		}
		return
	}
	t.Fatal("no admin cluster role")
}

func TestUncovered(t *testing.T) {
	p := defaultPolicy(roleBinding("team", "alice-admin", clusterRoleRef("admin"), userSubject("alice")))
	admin := p.roleRules(clusterRoleRef("admin"), "")
	if missing := p.Uncovered(alice, "team", p.roleRules(clusterRoleRef("view"), "")); len(missing) != 0 {
		t.Errorf("admin in team does not cover view there: %v", missing)
	}
	if missing := p.Uncovered(alice, "team", admin); len(missing) != 0 {
		t.Errorf("admin in team does not cover itself there: %v", missing)
	}
	if missing := p.Uncovered(alice, "other", p.roleRules(clusterRoleRef("view"), "")); len(missing) == 0 {
		t.Error("admin in team covers view in another namespace")
	}
	if missing := p.Uncovered(alice, "", p.roleRules(clusterRoleRef("view"), "")); len(missing) == 0 {
		t.Error("admin in team covers view cluster-wide")
	}
	// A wildcard is covered only by a wildcard.
	star := []rbacv1.PolicyRule{rule([]string{"get"}, core, "*")}
	missing := p.Uncovered(alice, "team", star)
	if len(missing) != 1 || missing[0].Resources[0] != "*" {
		t.Errorf("get on every core resource: missing %v, want that rule", missing)
	}
	named := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: core, Resources: []string{"nodes"}, ResourceNames: []string{"n1"}}}
	if missing := p.Uncovered(alice, "team", named); len(missing) != 1 || missing[0].ResourceNames[0] != "n1" {
		t.Errorf("a named node: missing %v", missing)
	}
	paths := []rbacv1.PolicyRule{urls([]string{"get"}, "/version", "/metrics")}
	if missing := p.Uncovered(alice, "", paths); len(missing) != 1 || missing[0].NonResourceURLs[0] != "/metrics" {
		t.Errorf("paths: missing %v, want /metrics only", missing)
	}
}

func TestRulesFor(t *testing.T) {
	p := defaultPolicy(roleBinding("team", "alice-view", clusterRoleRef("view"), userSubject("alice")))
	cluster := p.RulesFor(alice, "")
	inTeam := p.RulesFor(alice, "team")
	if len(inTeam) <= len(cluster) {
		t.Fatalf("rules in team (%d) are not more than cluster-wide (%d)", len(inTeam), len(cluster))
	}
	for _, r := range inTeam {
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("view's rules name secrets: %v", r)
		}
	}
}
