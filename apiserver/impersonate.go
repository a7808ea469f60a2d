package apiserver

import (
	"net/http"
	"slices"
	"strings"

	"cairn/apiserver/authn"
	"cairn/apiserver/authz"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// impersonate returns the user a request acts as: u, or the user its
// Impersonate-User, Impersonate-Group and Impersonate-Uid headers name
// (`kubectl --as jane --as-group dev`), if u may impersonate each of
// them (the verb impersonate on users, groups, uids, or the service
// account named). A client that asks to act as another user and may not
// gets 403, never its own identity in silence.
func (s *Server) impersonate(r *http.Request, u *authn.User) (*authn.User, error) {
	name := r.Header.Get(authenticationv1.ImpersonateUserHeader)
	groups := r.Header.Values(authenticationv1.ImpersonateGroupHeader)
	uid := r.Header.Get(authenticationv1.ImpersonateUIDHeader)
	if name == "" {
		if len(groups) > 0 || uid != "" {
			return nil, apierrors.NewBadRequest("impersonating groups or a UID requires impersonating a user (" + authenticationv1.ImpersonateUserHeader + ")")
		}
		return u, nil
	}
	checks := []authz.Request{{Verb: "impersonate", Resource: "users", Name: name}}
	if ns, sa, ok := serviceAccountOf(name); ok {
		checks[0] = authz.Request{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: sa}
	}
	for _, g := range groups {
		checks = append(checks, authz.Request{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if uid != "" {
		checks = append(checks, authz.Request{Verb: "impersonate", Group: authenticationv1.GroupName, Resource: "uids", Name: uid})
	}
	for _, c := range checks {
		if allowed, why := s.authorize(u, c); !allowed {
			return nil, forbidden(u, c, why)
		}
	}
	as := &authn.User{Name: name, UID: uid, Groups: append([]string(nil), groups...)}
	if !slices.Contains(as.Groups, authn.GroupAuthenticated) {
		as.Groups = append(as.Groups, authn.GroupAuthenticated)
	}
	return as, nil
}

// serviceAccountOf splits a service account's user name.
func serviceAccountOf(user string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(user, "system:serviceaccount:")
	if !found {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != ""
}
