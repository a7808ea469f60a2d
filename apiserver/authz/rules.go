package authz

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Request is what a request asks to do, as RBAC matches it.
type Request struct {
	// Verb is the API verb (get, list, create...) of a resource request,
	// or the lower-case HTTP method of a non-resource one.
	Verb string
	// Namespace, Group, Resource, Subresource and Name address a resource
	// request; Namespace is empty for cluster-scoped resources and for
	// requests across all namespaces.
	Namespace, Group, Resource, Subresource, Name string
	// Path is a non-resource request's URL path; empty for a resource
	// request.
	Path string
}

// IsResource reports whether r is a resource request (one with no path).
func (r Request) IsResource() bool { return r.Path == "" }

// ruleAllows reports whether rule grants r.
func ruleAllows(rule *rbacv1.PolicyRule, r Request) bool {
	if !matches(rule.Verbs, r.Verb) {
		return false
	}
	if !r.IsResource() {
		return nonResourceURLMatches(rule.NonResourceURLs, r.Path)
	}
	return matches(rule.APIGroups, r.Group) &&
		resourceMatches(rule.Resources, r.Resource, r.Subresource) &&
		(len(rule.ResourceNames) == 0 || contains(rule.ResourceNames, r.Name))
}

// matches reports whether a rule's list holds want or the wildcard.
func matches(list []string, want string) bool {
	for _, s := range list {
		if s == rbacv1.VerbAll || s == want {
			return true
		}
	}
	return false
}

func contains(list []string, want string) bool {
	for _, s := range list {
		if s == want {
			return true
		}
	}
	return false
}

// resourceMatches: "*" is every resource and subresource, "pods" only the
// pods themselves, "pods/log" their log, and "*/scale" the scale of any
// resource.
func resourceMatches(list []string, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined += "/" + subresource
	}
	for _, s := range list {
		switch {
		case s == rbacv1.ResourceAll, s == combined:
			return true
		case subresource != "" && s == "*/"+subresource:
			return true
		}
	}
	return false
}

// nonResourceURLMatches: "*" is every path, "/apis/*" every path under
// /apis/, anything else one path.
func nonResourceURLMatches(list []string, path string) bool {
	for _, s := range list {
		switch {
		case s == rbacv1.NonResourceAll, s == path:
			return true
		case strings.HasSuffix(s, "*") && strings.HasPrefix(path, strings.TrimSuffix(s, "*")):
			return true
		}
	}
	return false
}
