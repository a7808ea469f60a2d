package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"cairn/apiserver/authn"
	"cairn/apiserver/authz"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// admitRBAC is Kubernetes' escalation check on roles and bindings: a
// user may write a role only with rules they hold themselves (or with
// the verb escalate on roles), and bind a role only if they hold its
// rules where the binding grants them (or have the verb bind on it).
// Otherwise the right to edit bindings would be the right to everything.
// An update that leaves the rules, or the role and subjects, as they
// were grants nothing new and is not checked.
func (h *restHandler) admitRBAC(ctx context.Context, obj, current runtime.Object) error {
	u, ok := UserFrom(ctx)
	if !ok || !usesRBAC(u) {
		return nil
	}
	var (
		scope    string // where the rules would apply: a namespace, or "" for the cluster
		rules    []rbacv1.PolicyRule
		may      authz.Request // the verb that allows it anyway
		sameAs   func(runtime.Object) bool
		resource = h.res.GVR.Resource
	)
	switch o := obj.(type) {
	case *rbacv1.Role:
		scope, rules = o.Namespace, o.Rules
		may = authz.Request{Verb: "escalate", Namespace: o.Namespace, Group: rbacv1.GroupName, Resource: resource, Name: o.Name}
		sameAs = func(c runtime.Object) bool { return reflect.DeepEqual(o.Rules, c.(*rbacv1.Role).Rules) }
	case *rbacv1.ClusterRole:
		rules = o.Rules
		may = authz.Request{Verb: "escalate", Group: rbacv1.GroupName, Resource: resource, Name: o.Name}
		sameAs = func(c runtime.Object) bool {
			old := c.(*rbacv1.ClusterRole)
			return reflect.DeepEqual(o.Rules, old.Rules) && reflect.DeepEqual(o.AggregationRule, old.AggregationRule)
		}
	case *rbacv1.RoleBinding:
		scope = o.Namespace
		may = bindRequest(o.RoleRef, o.Namespace)
		sameAs = func(c runtime.Object) bool {
			old := c.(*rbacv1.RoleBinding)
			return o.RoleRef == old.RoleRef && reflect.DeepEqual(o.Subjects, old.Subjects)
		}
	case *rbacv1.ClusterRoleBinding:
		may = bindRequest(o.RoleRef, "")
		sameAs = func(c runtime.Object) bool {
			old := c.(*rbacv1.ClusterRoleBinding)
			return o.RoleRef == old.RoleRef && reflect.DeepEqual(o.Subjects, old.Subjects)
		}
	default:
		return nil
	}
	if current != nil && sameAs(current) {
		return nil
	}
	if allowed, _ := h.s.authorize(u, may); allowed {
		return nil
	}
	policy := h.s.rbac.policy()
	if policy == nil {
		return apierrors.NewTooManyRequests("the API server is still loading its roles and bindings", 1)
	}
	name := metaName(obj)
	refuse := func(err error) error { return apierrors.NewForbidden(h.res.GVR.GroupResource(), name, err) }
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		if o.AggregationRule != nil {
			// Its rules come from roles written later, by anyone allowed
			// to label a cluster role.
			return refuse(fmt.Errorf("user %q may not write a ClusterRole with an aggregationRule: that needs the verb escalate on clusterroles", u.Name))
		}
	case *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
		var found bool
		if rules, found = policy.RoleRules(refOf(o), scope); !found {
			return refuse(fmt.Errorf("user %q may only bind an existing role, or one they may bind (verb bind): %s %q not found", u.Name, refOf(o).Kind, refOf(o).Name))
		}
	}
	missing := policy.Uncovered(authz.User{Name: u.Name, Groups: u.Groups}, scope, rules)
	if len(missing) == 0 {
		return nil
	}
	return refuse(escalationError(u, scope, missing))
}

// bindRequest is the request whose approval lets a user bind ref in
// namespace (empty for a ClusterRoleBinding) whatever its rules: the
// verb bind on the role, asked where the binding is, so that a
// RoleBinding may grant it.
func bindRequest(ref rbacv1.RoleRef, namespace string) authz.Request {
	return authz.Request{Verb: "bind", Namespace: namespace, Group: rbacv1.GroupName,
		Resource: strings.ToLower(ref.Kind) + "s", Name: ref.Name}
}

func refOf(obj runtime.Object) rbacv1.RoleRef {
	switch o := obj.(type) {
	case *rbacv1.RoleBinding:
		return o.RoleRef
	case *rbacv1.ClusterRoleBinding:
		return o.RoleRef
	}
	return rbacv1.RoleRef{}
}

func metaName(obj runtime.Object) string {
	if m, err := metaOf(obj); err == nil {
		return m.GetName()
	}
	return ""
}

// escalationError names what the user would grant without holding it.
func escalationError(u *authn.User, scope string, missing []rbacv1.PolicyRule) error {
	where := "cluster-wide"
	if scope != "" {
		where = fmt.Sprintf("in namespace %q", scope)
	}
	const shown = 10
	var parts []string
	for i, r := range missing {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(missing)-shown))
			break
		}
		if len(r.NonResourceURLs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r.Verbs[0], r.NonResourceURLs[0]))
			continue
		}
		res := r.Resources[0]
		if r.APIGroups[0] != "" {
			res += "." + r.APIGroups[0]
		}
		if len(r.ResourceNames) > 0 {
			res += "/" + r.ResourceNames[0]
		}
		parts = append(parts, r.Verbs[0]+" "+res)
	}
	return fmt.Errorf("user %q is attempting to grant RBAC permissions not currently held %s: %s", u.Name, where, strings.Join(parts, ", "))
}
