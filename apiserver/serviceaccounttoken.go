package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/serviceaccount"
	"cairn/apiserver/storage"
	"cairn/internal/bootstrap"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ServiceAccountConfig turns on service account tokens: the TokenRequest
// API (serviceaccounts/{name}/token) and their use as bearer tokens.
type ServiceAccountConfig struct {
	Signer *serviceaccount.Signer
	// Audiences are the API's own audiences (Kubernetes' --api-audiences):
	// a bearer token must name one, and tokens requested without
	// audiences get them. The issuer when empty.
	Audiences []string
	// MaxExpiration caps the lifetime a client may ask for
	// (DefaultMaxTokenExpiration when zero).
	MaxExpiration time.Duration
	// JWKSURI is the jwks_uri of the issuer discovery document; this
	// server's advertised address when empty.
	JWKSURI string
	// CACert is the cluster CA certificate (PEM), the ca.crt of the
	// Secrets that hold legacy tokens.
	CACert []byte
}

const (
	// DefaultMaxTokenExpiration caps requested token lifetimes.
	DefaultMaxTokenExpiration = 48 * time.Hour
	// minTokenExpiration is Kubernetes' floor for a requested lifetime.
	minTokenExpiration = 10 * time.Minute
	// defaultTokenExpiration is the lifetime of a request that names none.
	defaultTokenExpiration = time.Hour
)

func (c *ServiceAccountConfig) audiences() []string {
	if len(c.Audiences) > 0 {
		return c.Audiences
	}
	return []string{c.Signer.Issuer()}
}

// withServiceAccounts puts the service account authenticator in front of
// inner, after client certificates as in Kubernetes (a request with both
// is the certificate's user): it passes over bearer tokens of other
// issuers.
func (s *Server) withServiceAccounts(inner authn.Authenticator) authn.Authenticator {
	sa := &serviceaccount.Authenticator{
		Signer:     s.cfg.ServiceAccounts.Signer,
		Audiences:  s.cfg.ServiceAccounts.audiences(),
		Objects:    cachedObjects{s},
		LegacyUsed: (&legacyTokenUses{s: s}).used,
	}
	return authn.Chain{authn.ClientCert{}, sa, inner}
}

// cachedGet reads one object of a core resource (getCached) for the
// authenticator, which has no request context to pass.
func cachedGet[T runtime.Object](s *Server, resource, namespace, name string) (T, bool) {
	var zero T
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource(resource)]
	if !ok {
		return zero, false
	}
	obj, err := h.getCached(context.Background(), namespace, name)
	if err != nil {
		return zero, false
	}
	typed, ok := obj.(T)
	return typed, ok
}

// cachedObjects looks up, for the authenticator, the objects a token
// refers to: it stops working once this replica sees one of them gone.
type cachedObjects struct{ s *Server }

func (c cachedObjects) ServiceAccount(namespace, name string) (*corev1.ServiceAccount, bool) {
	return cachedGet[*corev1.ServiceAccount](c.s, "serviceaccounts", namespace, name)
}

func (c cachedObjects) Pod(namespace, name string) (*corev1.Pod, bool) {
	return cachedGet[*corev1.Pod](c.s, "pods", namespace, name)
}

func (c cachedObjects) Secret(namespace, name string) (*corev1.Secret, bool) {
	return cachedGet[*corev1.Secret](c.s, "secrets", namespace, name)
}

func (c cachedObjects) Node(name string) (*corev1.Node, bool) {
	return cachedGet[*corev1.Node](c.s, "nodes", "", name)
}

// serveServiceAccountToken serves POST serviceaccounts/{name}/token
// (`kubectl create token`, and the agents for pods' projected tokens): a
// token of that service account, optionally bound to a pod or a secret
// so that it dies with it.
func serveServiceAccountToken(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	gr := h.res.GVR.GroupResource()
	if info.Verb != "create" {
		return apierrors.NewMethodNotSupported(gr, info.Verb+" token")
	}
	cfg := h.s.cfg.ServiceAccounts
	if cfg == nil {
		return apierrors.NewServiceUnavailable("service account tokens are off on this API server (it has no CA key to sign them with)")
	}
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	req := &authenticationv1.TokenRequest{}
	if err := decodeBody(r, body, req, strictFields(r)); err != nil {
		return err
	}
	ctx := r.Context()
	sa, err := h.s.serviceAccount(ctx, info.Namespace, info.Name)
	if err != nil {
		return err
	}

	life := defaultTokenExpiration
	if req.Spec.ExpirationSeconds != nil {
		life = time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	}
	if life < minTokenExpiration {
		return apierrors.NewBadRequest(fmt.Sprintf("spec.expirationSeconds: may not specify a duration less than %d seconds", int(minTokenExpiration.Seconds())))
	}
	max := cfg.MaxExpiration
	if max == 0 {
		max = DefaultMaxTokenExpiration
	}
	life = min(life, max)
	audiences := req.Spec.Audiences
	if len(audiences) == 0 {
		audiences = cfg.audiences()
	}

	tok := serviceaccount.Token{
		Namespace:      info.Namespace,
		ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: string(sa.UID)},
		Audiences:      audiences,
		IssuedAt:       time.Now(),
	}
	tok.Expiry = tok.IssuedAt.Add(life)
	bound, err := h.s.boundObject(ctx, info.Namespace, req.Spec.BoundObjectRef)
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	switch obj := bound.(type) {
	case *corev1.Pod:
		pod = obj
		if name := obj.Spec.ServiceAccountName; name != "" && name != sa.Name {
			return apierrors.NewBadRequest(fmt.Sprintf("pod %s runs as service account %q, not %q", obj.Name, name, sa.Name))
		}
		tok.Pod = &serviceaccount.Ref{Name: obj.Name, UID: string(obj.UID)}
	case *corev1.Secret:
		tok.Secret = &serviceaccount.Ref{Name: obj.Name, UID: string(obj.UID)}
	case *corev1.Node:
		tok.Node = &serviceaccount.Ref{Name: obj.Name, UID: string(obj.UID)}
	}
	if u, ok := UserFrom(ctx); ok && isNode(u) {
		// A node may mint tokens only for the pods it runs, as
		// Kubernetes' node authorizer allows.
		node := strings.TrimPrefix(u.Name, bootstrap.NodeUserPrefix)
		if pod == nil || pod.Spec.NodeName != node {
			return apierrors.NewForbidden(gr, info.Name, fmt.Errorf("node %q may request tokens only for pods bound to it (spec.boundObjectRef)", node))
		}
	}
	signed, err := cfg.Signer.Issue(tok)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	seconds := int64(life / time.Second)
	out := &authenticationv1.TokenRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, CreationTimestamp: metav1.NewTime(tok.IssuedAt)},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: audiences, ExpirationSeconds: &seconds, BoundObjectRef: req.Spec.BoundObjectRef,
		},
		Status: authenticationv1.TokenRequestStatus{Token: signed, ExpirationTimestamp: metav1.NewTime(tok.Expiry)},
	}
	return respondCreated(w, r, out, authenticationv1.SchemeGroupVersion)
}

// serviceAccount reads a service account from the cache, or from the
// store when the cache does not have it (yet).
func (s *Server) serviceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
	}
	obj, err := h.getCached(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// boundObject returns the object a token request binds its token to (a
// Pod, a Secret or a Node, as `kubectl create token --bound-object-kind`
// names them), checked to exist with the given UID; nil when it names
// none.
func (s *Server) boundObject(ctx context.Context, namespace string, ref *authenticationv1.BoundObjectReference) (runtime.Object, error) {
	if ref == nil {
		return nil, nil
	}
	var resource string
	switch {
	case ref.APIVersion != "" && ref.APIVersion != "v1":
	case ref.Kind == "Pod":
		resource = "pods"
	case ref.Kind == "Secret":
		resource = "secrets"
	case ref.Kind == "Node":
		resource, namespace = "nodes", ""
	}
	if resource == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.boundObjectRef: Cairn binds tokens to pods, secrets and nodes (kind Pod, Secret or Node, apiVersion v1), not to %s %s", ref.APIVersion, ref.Kind))
	}
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource(resource)]
	if !ok {
		return nil, apierrors.NewBadRequest("spec.boundObjectRef: this API server does not serve " + resource)
	}
	uidOf := func(obj runtime.Object) types.UID {
		m, _ := metaOf(obj)
		return m.GetUID()
	}
	// An object the cache has in another incarnation than the one asked
	// for is read again from the store: the cache may lag its replacement.
	obj, err := h.getCached(ctx, namespace, ref.Name)
	if err == nil && ref.UID != "" && uidOf(obj) != ref.UID {
		obj, err = h.store.Get(ctx, h.key(namespace, ref.Name), storage.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.boundObjectRef: %s %s does not exist", strings.ToLower(ref.Kind), path.Join(namespace, ref.Name)))
	}
	if err != nil {
		return nil, err
	}
	if uid := uidOf(obj); ref.UID != "" && ref.UID != uid {
		return nil, apierrors.NewConflict(h.res.GVR.GroupResource(), ref.Name,
			fmt.Errorf("spec.boundObjectRef: the %s's uid is %s, not %s (it was replaced)", strings.ToLower(ref.Kind), uid, ref.UID))
	}
	return obj, nil
}
