package authz

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Uncovered returns the parts of rules that u may not do itself in
// namespace (cluster-wide when empty), each as a rule of one verb on one
// resource (or path): Kubernetes' escalation check, under which no one
// writes a role, or binds one, that grants more than they hold. A
// wildcard in rules is covered only by the same wildcard.
func (p *Policy) Uncovered(u User, namespace string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var missing []rbacv1.PolicyRule
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				if ok, _ := p.Authorize(u, Request{Verb: verb, Path: url}); !ok {
					missing = append(missing, rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{url}})
				}
			}
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					names := rule.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						r := Request{Verb: verb, Namespace: namespace, Group: group, Resource: resource, Subresource: sub, Name: name}
						if ok, _ := p.Authorize(u, r); ok {
							continue
						}
						m := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}}
						if name != "" {
							m.ResourceNames = []string{name}
						}
						missing = append(missing, m)
					}
				}
			}
		}
	}
	return missing
}
