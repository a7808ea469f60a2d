package apiserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"cairn/apiserver/authn"
	"cairn/apiserver/authz"
	"cairn/apiserver/registry"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The self reviews answer what a client may ask of the API server about
// itself: who it is (`kubectl auth whoami`), whether it may do something
// (`kubectl auth can-i VERB RESOURCE`), and what it may do (`kubectl auth
// can-i --list`). They are created and answered, never stored.

var (
	selfSubjectReviews       = authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews")
	selfSubjectAccessReviews = authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews")
	selfSubjectRulesReviews  = authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews")
)

// servedResources are the stored resources of cfg and the self reviews,
// as discovery and OpenAPI list them.
func servedResources(cfg Config) []*registry.Resource {
	review := func(gvr schema.GroupVersionResource, kind string, obj func() runtime.Object) *registry.Resource {
		return &registry.Resource{GVR: gvr, Kind: kind, New: obj, CreateOnly: true}
	}
	return append(slices.Clone(cfg.Resources),
		review(selfSubjectReviews, "SelfSubjectReview", func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }),
		review(selfSubjectAccessReviews, "SelfSubjectAccessReview", func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }),
		review(selfSubjectRulesReviews, "SelfSubjectRulesReview", func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }),
	)
}

// serveSelfReview answers a self review, if the request is one.
func (s *Server) serveSelfReview(w http.ResponseWriter, r *http.Request, info requestInfo) bool {
	gvr := schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}
	var review func(u *authn.User, decode func(runtime.Object) error) (runtime.Object, error)
	switch gvr {
	case selfSubjectReviews:
		review = reviewSelf
	case selfSubjectAccessReviews:
		review = s.reviewSelfAccess
	case selfSubjectRulesReviews:
		review = s.reviewSelfRules
	default:
		return false
	}
	if info.Verb != "create" || info.Name != "" || info.Subresource != "" || info.Namespace != "" {
		writeError(w, apierrors.NewMethodNotSupported(gvr.GroupResource(), info.Verb))
		return true
	}
	u, _ := UserFrom(r.Context())
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err == nil && len(body) > maxBodyBytes {
		err = apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	var out runtime.Object
	if err == nil {
		out, err = review(u, func(obj runtime.Object) error { return decodeReview(r, body, obj) })
	}
	if err == nil {
		err = respondCreated(w, r, out, gvr.GroupVersion())
	}
	if err != nil {
		writeError(w, err)
	}
	return true
}

// respondCreated answers a review with 201, in the media type asked for.
func respondCreated(w http.ResponseWriter, r *http.Request, obj runtime.Object, gv schema.GroupVersion) error {
	media := negotiateOutput(withoutTable(r))
	if media.as != "" {
		media.mediaType, media.as = mediaJSON, ""
	}
	return writeObject(w, media.mediaType, gv, http.StatusCreated, obj)
}

// decodeReview decodes a review's body into obj; an empty body is an
// empty review.
func decodeReview(r *http.Request, body []byte, obj runtime.Object) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeBody(r, body, obj, strictFields(r))
}

func reviewSelf(u *authn.User, decode func(runtime.Object) error) (runtime.Object, error) {
	out := &authenticationv1.SelfSubjectReview{}
	if err := decode(out); err != nil {
		return nil, err
	}
	out.Status.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: append([]string(nil), u.Groups...)}
	return out, nil
}

func (s *Server) reviewSelfAccess(u *authn.User, decode func(runtime.Object) error) (runtime.Object, error) {
	review := &authorizationv1.SelfSubjectAccessReview{}
	if err := decode(review); err != nil {
		return nil, err
	}
	res, nonRes := review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes
	var req authz.Request
	switch {
	case (res == nil) == (nonRes == nil):
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "",
			field.ErrorList{field.Invalid(field.NewPath("spec"), "", "exactly one of resourceAttributes and nonResourceAttributes must be set")})
	case res != nil:
		req = authz.Request{Verb: res.Verb, Namespace: res.Namespace, Group: res.Group, Resource: res.Resource,
			Subresource: res.Subresource, Name: res.Name}
	default:
		req = authz.Request{Verb: nonRes.Verb, Path: nonRes.Path}
	}
	review.Status.Allowed, review.Status.Reason = s.authorize(u, req)
	review.Status.Denied = !review.Status.Allowed
	return review, nil
}

// reviewSelfRules lists what the user may do in the review's namespace
// (`kubectl auth can-i --list`).
func (s *Server) reviewSelfRules(u *authn.User, decode func(runtime.Object) error) (runtime.Object, error) {
	review := &authorizationv1.SelfSubjectRulesReview{}
	if err := decode(review); err != nil {
		return nil, err
	}
	all := []string{"*"}
	everything := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: all, APIGroups: all, Resources: all}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: all, NonResourceURLs: all}},
	}
	switch {
	case isAdmin(u):
		review.Status = everything
	case isNode(u):
		// Rules only grant, so the nodes' exceptions cannot be listed as
		// rules: the answer says it is incomplete, and why.
		review.Status = everything
		review.Status.Incomplete = true
		subs := make([]string, len(nodeForbiddenSubresources))
		for i, sub := range nodeForbiddenSubresources {
			subs[i] = "pods/" + sub
		}
		review.Status.EvaluationError = "nodes may not use " + strings.Join(subs, ", ") +
			", impersonate, or write roles and bindings, which these rules do not show"
	default:
		policy := s.rbac.policy()
		if policy == nil {
			review.Status.Incomplete = true
			review.Status.EvaluationError = "the roles and bindings are still loading"
			break
		}
		for _, r := range policy.RulesFor(authz.User{Name: u.Name, Groups: u.Groups}, review.Spec.Namespace) {
			if len(r.Resources) > 0 {
				review.Status.ResourceRules = append(review.Status.ResourceRules, authorizationv1.ResourceRule{
					Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
			}
			if len(r.NonResourceURLs) > 0 {
				review.Status.NonResourceRules = append(review.Status.NonResourceRules, authorizationv1.NonResourceRule{
					Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			}
		}
	}
	return review, nil
}
