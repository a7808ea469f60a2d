package apiserver

import (
	"errors"
	"net/http"
	"slices"

	"cairn/apiserver/authn"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// impersonate returns the user a request acts as: u, or the user its
// Impersonate-User, Impersonate-Group and Impersonate-Uid headers name
// (`kubectl --as jane --as-group dev`), if u may impersonate. A client
// that asks to act as another user and may not gets 403, never its own
// identity in silence.
func impersonate(r *http.Request, u *authn.User) (*authn.User, error) {
	name := r.Header.Get(authenticationv1.ImpersonateUserHeader)
	groups := r.Header.Values(authenticationv1.ImpersonateGroupHeader)
	uid := r.Header.Get(authenticationv1.ImpersonateUIDHeader)
	if name == "" {
		if len(groups) > 0 || uid != "" {
			return nil, apierrors.NewBadRequest("impersonating groups or a UID requires impersonating a user (" + authenticationv1.ImpersonateUserHeader + ")")
		}
		return u, nil
	}
	checks := []authzRequest{{Verb: "impersonate", Resource: "users"}}
	for range groups {
		checks = append(checks, authzRequest{Verb: "impersonate", Resource: "groups"})
	}
	if uid != "" {
		checks = append(checks, authzRequest{Verb: "impersonate", Resource: "uids"})
	}
	for _, c := range checks {
		if allowed, why := authorize(u, c); !allowed {
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: c.Resource}, name, errors.New(why))
		}
	}
	as := &authn.User{Name: name, UID: uid, Groups: append([]string(nil), groups...)}
	if !slices.Contains(as.Groups, authn.GroupAuthenticated) {
		as.Groups = append(as.Groups, authn.GroupAuthenticated)
	}
	return as, nil
}
