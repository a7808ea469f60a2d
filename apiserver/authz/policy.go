package authz

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// User is who asks: a name and groups, as authenticated.
type User struct {
	Name   string
	Groups []string
}

// ServiceAccountUsername is the user name of a service account's tokens.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Policy is one view of every role and binding. It is immutable: a
// change of any of them makes a new Policy.
type Policy struct {
	roles           map[string]map[string]*rbacv1.Role // namespace → name
	clusterBindings []*rbacv1.ClusterRoleBinding
	bindings        map[string][]*rbacv1.RoleBinding // namespace
	// clusterRules are each cluster role's rules, its aggregated ones
	// included.
	clusterRules map[string][]rbacv1.PolicyRule
}

// NewPolicy builds a Policy. It keeps the objects, which the caller must
// not change afterwards.
func NewPolicy(clusterRoles []*rbacv1.ClusterRole, roles []*rbacv1.Role,
	clusterBindings []*rbacv1.ClusterRoleBinding, bindings []*rbacv1.RoleBinding) *Policy {
	p := &Policy{
		roles:           map[string]map[string]*rbacv1.Role{},
		clusterBindings: slices.Clone(clusterBindings),
		bindings:        map[string][]*rbacv1.RoleBinding{},
		clusterRules:    aggregate(clusterRoles),
	}
	for _, r := range roles {
		if p.roles[r.Namespace] == nil {
			p.roles[r.Namespace] = map[string]*rbacv1.Role{}
		}
		p.roles[r.Namespace][r.Name] = r
	}
	// Sorted, so that the binding a decision cites does not depend on
	// the caches' order.
	slices.SortFunc(p.clusterBindings, func(a, b *rbacv1.ClusterRoleBinding) int { return strings.Compare(a.Name, b.Name) })
	for _, b := range bindings {
		p.bindings[b.Namespace] = append(p.bindings[b.Namespace], b)
	}
	for _, list := range p.bindings {
		slices.SortFunc(list, func(a, b *rbacv1.RoleBinding) int { return strings.Compare(a.Name, b.Name) })
	}
	return p
}

// aggregate returns each cluster role's rules: its own, and for one with
// an aggregationRule those of every cluster role its selectors match, as
// Kubernetes' aggregation controller would have written them. Computing
// them here means a new aggregated role takes effect with no controller
// in between.
func aggregate(clusterRoles []*rbacv1.ClusterRole) map[string][]rbacv1.PolicyRule {
	byName := map[string]*rbacv1.ClusterRole{}
	names := make([]string, 0, len(clusterRoles))
	for _, cr := range clusterRoles {
		byName[cr.Name] = cr
		names = append(names, cr.Name)
	}
	slices.Sort(names)
	out := map[string][]rbacv1.PolicyRule{}
	var resolve func(name string, visiting map[string]bool) []rbacv1.PolicyRule
	resolve = func(name string, visiting map[string]bool) []rbacv1.PolicyRule {
		if rules, done := out[name]; done {
			return rules
		}
		cr := byName[name]
		rules := slices.Clone(cr.Rules)
		if cr.AggregationRule != nil && !visiting[name] {
			visiting[name] = true
			for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
				selector, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					continue // validation refuses such selectors
				}
				for _, other := range names {
					if other != name && !visiting[other] && selector.Matches(labels.Set(byName[other].Labels)) {
						rules = appendNew(rules, resolve(other, visiting)...)
					}
				}
			}
			delete(visiting, name)
		}
		out[name] = rules
		return rules
	}
	for _, name := range names {
		resolve(name, map[string]bool{})
	}
	return out
}

// appendNew appends the rules list does not hold yet.
func appendNew(list []rbacv1.PolicyRule, rules ...rbacv1.PolicyRule) []rbacv1.PolicyRule {
	for _, r := range rules {
		if !slices.ContainsFunc(list, func(have rbacv1.PolicyRule) bool { return ruleEqual(have, r) }) {
			list = append(list, r)
		}
	}
	return list
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// Authorize decides r for u. An allowed request comes with the binding
// that allows it, in Kubernetes' words; a denied one has no reason, since
// RBAC only grants.
func (p *Policy) Authorize(u User, r Request) (allowed bool, reason string) {
	for _, b := range p.clusterBindings {
		s, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		for i := range p.clusterRules[b.RoleRef.Name] {
			if ruleAllows(&p.clusterRules[b.RoleRef.Name][i], r) {
				return true, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to %s", b.Name, b.RoleRef.Name, describe(s))
			}
		}
	}
	if !r.IsResource() || r.Namespace == "" {
		return false, ""
	}
	for _, b := range p.bindings[r.Namespace] {
		s, ok := appliesTo(u, b.Subjects, b.Namespace)
		if !ok {
			continue
		}
		rules := p.roleRules(b.RoleRef, b.Namespace)
		for i := range rules {
			if ruleAllows(&rules[i], r) {
				return true, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s", b.Name+"/"+b.Namespace, b.RoleRef.Kind, b.RoleRef.Name, describe(s))
			}
		}
	}
	return false, ""
}

// RulesFor lists what u may do in namespace (cluster-wide only, when
// empty): the rules of every role bound to u there.
func (p *Policy) RulesFor(u User, namespace string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range p.clusterBindings {
		if _, ok := appliesTo(u, b.Subjects, ""); ok {
			rules = appendNew(rules, p.clusterRules[b.RoleRef.Name]...)
		}
	}
	if namespace == "" {
		return rules
	}
	for _, b := range p.bindings[namespace] {
		if _, ok := appliesTo(u, b.Subjects, b.Namespace); ok {
			rules = appendNew(rules, p.roleRules(b.RoleRef, b.Namespace)...)
		}
	}
	return rules
}

// RoleRules returns the rules a binding in namespace (empty for a
// ClusterRoleBinding) to ref grants, and whether the role exists.
func (p *Policy) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "ClusterRole":
		rules, ok := p.clusterRules[ref.Name]
		return rules, ok
	case "Role":
		r, ok := p.roles[namespace][ref.Name]
		if !ok {
			return nil, false
		}
		return r.Rules, true
	}
	return nil, false
}

func (p *Policy) roleRules(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
	rules, _ := p.RoleRules(ref, namespace)
	return rules
}

// appliesTo returns the first of subjects that is u. A service account
// subject of a RoleBinding without a namespace is in the binding's.
func appliesTo(u User, subjects []rbacv1.Subject, bindingNamespace string) (rbacv1.Subject, bool) {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return s, true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return s, true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && u.Name == ServiceAccountUsername(ns, s.Name) {
				s.Namespace = ns
				return s, true
			}
		}
	}
	return rbacv1.Subject{}, false
}

func describe(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return fmt.Sprintf("ServiceAccount %q", s.Namespace+"/"+s.Name)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}
