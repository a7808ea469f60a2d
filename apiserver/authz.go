package apiserver

import (
	"fmt"
	"slices"
	"strings"

	"cairn/apiserver/authn"
	"cairn/internal/bootstrap"
	"cairn/internal/pki"
)

// The API server's authorization, all in one place so that what it
// enforces and what it answers `kubectl auth can-i` with cannot drift
// apart. RBAC objects are stored and served but not yet enforced: every
// authenticated user may do anything, except that
//   - a bootstrap token only joins the cluster (see serveBootstrap), and
//   - a node's credentials may not run commands in, attach to or forward
//     ports of pods, so that a stolen node certificate does not open a
//     shell in every pod of the cluster, and
//   - only administrators may impersonate (see impersonate).

// authzRequest is what a request asks to do, as an access review states
// it.
type authzRequest struct {
	// Verb is the API verb (get, create...) of a resource request, or the
	// HTTP verb of a non-resource one.
	Verb string
	// Group, Resource and Subresource name a resource request's target;
	// Path a non-resource request's.
	Group, Resource, Subresource string
	Path                         string
}

// nodeForbiddenSubresources are the pod subresources nodes may not use.
var nodeForbiddenSubresources = []string{"exec", "attach", "portforward"}

// authorize decides whether u may make the request, and why not.
func authorize(u *authn.User, req authzRequest) (allowed bool, reason string) {
	if req.Verb == "impersonate" {
		// As with Kubernetes' default roles, only administrators act as
		// another user: the store members' list, which needs their group,
		// stays theirs.
		if slices.Contains(u.Groups, pki.AdminOrganization) {
			return true, "administrators (group " + pki.AdminOrganization + ") may impersonate"
		}
		return false, fmt.Sprintf("user %q may not impersonate: only group %s may", u.Name, pki.AdminOrganization)
	}
	if authn.IsBootstrapUser(u) {
		if req.Resource == "" && strings.HasPrefix(req.Path, bootstrap.PathPrefix) {
			return true, "bootstrap tokens may join the cluster"
		}
		return false, authn.ErrBootstrapOnly.Error()
	}
	if isNode(u) && req.Group == "" && req.Resource == "pods" && slices.Contains(nodeForbiddenSubresources, req.Subresource) {
		return false, fmt.Sprintf("user %q is a node, and nodes may not use pods/%s", u.Name, req.Subresource)
	}
	return true, "every authenticated user may (RBAC is stored, not yet enforced)"
}

// isNode reports whether u holds a node's credentials.
func isNode(u *authn.User) bool { return slices.Contains(u.Groups, bootstrap.NodesGroup) }
