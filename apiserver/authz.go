package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/authz"
	"cairn/apiserver/storage"
	"cairn/internal/bootstrap"
	"cairn/internal/pki"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API server's authorization, all in one place so that what it
// enforces and what it answers `kubectl auth can-i` with cannot drift
// apart:
//   - a bootstrap token only joins the cluster (see serveBootstrap);
//   - administrators (group system:masters) may do anything, as in
//     Kubernetes, where that group bypasses every authorizer;
//   - nodes (group system:nodes) may do anything but run commands in,
//     attach to, forward ports of or add ephemeral containers to pods,
//     impersonate, or write roles and bindings: a stolen node
//     certificate neither opens a shell in every pod nor grants itself
//     more;
//   - everyone else gets what RBAC grants them (package authz).

// nodeForbiddenSubresources are the pod subresources nodes may not use.
var nodeForbiddenSubresources = []string{"exec", "attach", "portforward", "ephemeralcontainers"}

// authorize decides whether u may make the request, and why (not).
func (s *Server) authorize(u *authn.User, req authz.Request) (allowed bool, reason string) {
	if authn.IsBootstrapUser(u) {
		if !req.IsResource() && strings.HasPrefix(req.Path, bootstrap.PathPrefix) {
			return true, "bootstrap tokens may join the cluster"
		}
		return false, authn.ErrBootstrapOnly.Error()
	}
	if isAdmin(u) {
		return true, "administrators (group " + pki.AdminOrganization + ") may do anything"
	}
	if isNode(u) {
		return authorizeNode(u, req)
	}
	policy := s.rbac.policy()
	if policy == nil {
		return false, "the roles and bindings are still loading; retry in a moment"
	}
	return policy.Authorize(authz.User{Name: u.Name, Groups: u.Groups}, req)
}

// authorizeNode is the nodes' fixed policy.
func authorizeNode(u *authn.User, req authz.Request) (bool, string) {
	switch {
	case req.Verb == "impersonate":
		return false, fmt.Sprintf("user %q is a node, and nodes may not impersonate", u.Name)
	case req.Group == "" && req.Resource == "pods" && slices.Contains(nodeForbiddenSubresources, req.Subresource):
		return false, fmt.Sprintf("user %q is a node, and nodes may not use pods/%s", u.Name, req.Subresource)
	case req.Group == rbacv1.GroupName && !slices.Contains([]string{"get", "list", "watch"}, req.Verb):
		return false, fmt.Sprintf("user %q is a node, and nodes may not write roles or bindings", u.Name)
	}
	return true, "nodes may do anything but use pods' exec, attach, portforward and ephemeralcontainers, impersonate, or write roles and bindings"
}

// isAdmin reports whether u is an administrator.
func isAdmin(u *authn.User) bool { return slices.Contains(u.Groups, pki.AdminOrganization) }

// isNode reports whether u holds a node's credentials.
func isNode(u *authn.User) bool { return slices.Contains(u.Groups, bootstrap.NodesGroup) }

// usesRBAC reports whether RBAC decides u's requests.
func usesRBAC(u *authn.User) bool { return !authn.IsBootstrapUser(u) && !isAdmin(u) && !isNode(u) }

// authzRequestOf is what an HTTP request asks, as authorization sees it.
func authzRequestOf(r *http.Request) authz.Request {
	info, ok := parseRequestInfo(r)
	if !ok {
		return authz.Request{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	}
	req := authz.Request{Verb: info.Verb, Namespace: info.Namespace, Group: info.Group,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name}
	switch {
	case info.Group == "" && info.Resource == "namespaces" && info.Name != "":
		// A namespace is in itself: a RoleBinding there may grant it.
		req.Namespace = info.Name
	case (info.Verb == "list" || info.Verb == "watch") && info.Name == "":
		// A list or watch of one object by name is checked as that
		// object, as Kubernetes does, so that a rule with resourceNames
		// allows `kubectl get cm x -w`.
		if sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err == nil {
			if name, found := sel.RequiresExactMatch("metadata.name"); found {
				req.Name = name
			}
		}
	}
	return req
}

// checkAccess refuses a request u may not make, with Kubernetes' wording.
func (s *Server) checkAccess(r *http.Request, u *authn.User) error {
	if isAdmin(u) {
		return nil // the common case, for the servers' own loops: no request to parse
	}
	if usesRBAC(u) && (!s.rbac.bootstrapped.Load() || s.rbac.policy() == nil) {
		// client-go retries a 429 after Retry-After, so a client that
		// comes early waits rather than reads a denial.
		return apierrors.NewTooManyRequests("the API server is still creating or loading its roles and bindings", 1)
	}
	req := authzRequestOf(r)
	allowed, reason := s.authorize(u, req)
	if allowed {
		return nil
	}
	return forbidden(u, req, reason)
}

// forbidden is the 403 for a denied request: `User "alice" cannot list
// resource "pods" in API group "" in the namespace "default"`, and the
// reason when there is one.
func forbidden(u *authn.User, req authz.Request, reason string) error {
	var msg string
	if !req.IsResource() {
		msg = fmt.Sprintf("User %q cannot %s path %q", u.Name, req.Verb, req.Path)
	} else {
		resource := req.Resource
		if req.Subresource != "" {
			resource += "/" + req.Subresource
		}
		scope := "at the cluster scope"
		if req.Namespace != "" {
			scope = fmt.Sprintf("in the namespace %q", req.Namespace)
		}
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", u.Name, req.Verb, resource, req.Group, scope)
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: req.Group, Resource: req.Resource}, req.Name, fmt.Errorf("%s", msg))
}

// rbacPolicy keeps the RBAC Policy derived from the watch caches of the
// roles and bindings, and derives it again after any of them changed.
type rbacPolicy struct {
	// stores are the caches of clusterroles, roles, clusterrolebindings
	// and rolebindings; nil when the server does not serve RBAC, and then
	// the default roles and bindings apply.
	stores []*storage.Store

	// bootstrapped is set once the default roles and bindings are in the
	// caches (awaitDefaults); until then decisions could deny what the
	// defaults grant.
	bootstrapped atomic.Bool

	mu       sync.Mutex
	changes  []uint64
	current  *authz.Policy
	defaults *authz.Policy
}

var rbacResources = []string{"clusterroles", "roles", "clusterrolebindings", "rolebindings"}

func (s *Server) newRBACPolicy() *rbacPolicy {
	p := &rbacPolicy{}
	for _, res := range rbacResources {
		h, ok := s.handlers[rbacv1.SchemeGroupVersion.WithResource(res)]
		if !ok {
			p.stores = nil
			p.defaults = authz.NewPolicy(authz.DefaultClusterRoles(), nil, authz.DefaultClusterRoleBindings(), nil)
			p.bootstrapped.Store(true)
			return p
		}
		p.stores = append(p.stores, h.store)
	}
	p.changes = make([]uint64, len(p.stores))
	return p
}

// awaitDefaults marks the policy bootstrapped once every default
// ClusterRole and ClusterRoleBinding is in the caches, polling until then
// or until ctx ends.
func (p *rbacPolicy) awaitDefaults(ctx context.Context) {
	if p.bootstrapped.Load() {
		return
	}
	var roles, bindings []string
	for _, cr := range authz.DefaultClusterRoles() {
		roles = append(roles, cr.Name)
	}
	for _, crb := range authz.DefaultClusterRoleBindings() {
		bindings = append(bindings, crb.Name)
	}
	for {
		if cachedNames(p.stores[0], roles) && cachedNames(p.stores[2], bindings) {
			p.bootstrapped.Store(true)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cachedNames reports whether st's cache is ready and holds every name.
func cachedNames(st *storage.Store, names []string) bool {
	objs, _, ok := st.Objects()
	if !ok {
		return false
	}
	have := map[string]bool{}
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil {
			have[m.GetName()] = true
		}
	}
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}

// policy returns the current Policy, or nil until the caches are ready.
func (p *rbacPolicy) policy() *authz.Policy {
	if p.stores == nil {
		return p.defaults
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	stale := p.current == nil
	for i, st := range p.stores {
		n, ok := st.Changes()
		if !ok {
			return nil
		}
		stale = stale || n != p.changes[i]
	}
	if !stale {
		return p.current
	}
	lists := make([][]runtime.Object, len(p.stores))
	for i, st := range p.stores {
		objs, n, ok := st.Objects()
		if !ok {
			return nil
		}
		lists[i], p.changes[i] = objs, n
	}
	p.current = authz.NewPolicy(typed[*rbacv1.ClusterRole](lists[0]), typed[*rbacv1.Role](lists[1]),
		typed[*rbacv1.ClusterRoleBinding](lists[2]), typed[*rbacv1.RoleBinding](lists[3]))
	return p.current
}

func typed[T any](objs []runtime.Object) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
