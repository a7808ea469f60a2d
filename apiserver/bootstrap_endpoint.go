package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/storage"
	"cairn/internal/bootstrap"
	"cairn/internal/pki"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// BootstrapConfig turns on joining with tokens: bootstrap token
// authentication, GET /cacerts, and the endpoints that sign node
// certificates and hand joining servers the CA (see package
// cairn/internal/bootstrap for the flow).
type BootstrapConfig struct {
	// CA signs node certificates, and is handed, key included, to servers
	// that join with a server token.
	CA *pki.CA
	// StoreMembers lists the store's members, this server's own first.
	StoreMembers func(ctx context.Context) ([]bootstrap.StoreMember, error)
	// TokenCleanupInterval is how often expired token Secrets are deleted
	// (DefaultTokenCleanupInterval when zero).
	TokenCleanupInterval time.Duration
}

// DefaultTokenCleanupInterval is how often each API server deletes the
// Secrets of expired tokens, as Kubernetes' token cleaner does.
const DefaultTokenCleanupInterval = time.Minute

// maxBootstrapBody bounds a certificate request's body.
const maxBootstrapBody = 64 << 10

var secretsGVR = corev1.SchemeGroupVersion.WithResource("secrets")

// withBootstrapTokens puts bootstrap token authentication in front of next.
func (s *Server) withBootstrapTokens(next authn.Authenticator) authn.Authenticator {
	return &authn.BootstrapTokens{Lookup: s.tokenSecret, Next: next, Logger: s.log,
		Expired: func(id string) { go s.deleteExpiredToken(context.Background(), id) }}
}

// tokenSecret reads the Secret of the token id from the watch cache, or
// from the store when the cache lacks it: a token created a moment ago
// through another server may not have reached this one's cache yet.
func (s *Server) tokenSecret(ctx context.Context, id string) (*corev1.Secret, error) {
	h, ok := s.handlers[secretsGVR]
	if !ok {
		return nil, nil
	}
	obj, err := h.getCached(ctx, bootstrap.SecretNamespace, bootstrap.SecretName(id))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("apiserver: secret %s/%s is a %T", bootstrap.SecretNamespace, bootstrap.SecretName(id), obj)
	}
	return secret, nil
}

// deleteExpiredToken deletes the Secret of the token id if it is still
// expired when deleted (it may have been replaced meanwhile).
func (s *Server) deleteExpiredToken(ctx context.Context, id string) {
	h, ok := s.handlers[secretsGVR]
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stillExpired := func(current runtime.Object) error {
		secret, ok := current.(*corev1.Secret)
		if !ok {
			return errors.New("apiserver: not a secret")
		}
		info, _, err := bootstrap.ReadTokenSecret(secret)
		if err != nil || !info.Expired(time.Now()) {
			return errors.New("apiserver: the token is no longer expired")
		}
		return nil
	}
	_, err := h.store.Delete(ctx, h.key(bootstrap.SecretNamespace, bootstrap.SecretName(id)), nil, stillExpired)
	switch {
	case err == nil:
		s.log.Info("deleted an expired bootstrap token", "token_id", id)
	case !apierrors.IsNotFound(err):
		s.log.Debug("deleting an expired bootstrap token failed", "token_id", id, "err", err)
	}
}

// cleanExpiredTokens deletes expired tokens' Secrets until ctx ends.
func (s *Server) cleanExpiredTokens(ctx context.Context) {
	h, ok := s.handlers[secretsGVR]
	if !ok {
		return
	}
	interval := s.cfg.Bootstrap.TokenCleanupInterval
	if interval <= 0 {
		interval = DefaultTokenCleanupInterval
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		list, err := h.store.List(ctx, h.prefix(bootstrap.SecretNamespace), storage.ListOptions{ResourceVersion: "0"})
		if err != nil {
			continue
		}
		items, _ := list.(*corev1.SecretList)
		if items == nil {
			continue
		}
		for i := range items.Items {
			secret := &items.Items[i]
			if secret.Type != bootstrap.SecretType || !strings.HasPrefix(secret.Name, bootstrap.SecretNamePrefix) {
				continue
			}
			if info, _, err := bootstrap.ReadTokenSecret(secret); err == nil && info.Expired(time.Now()) {
				s.deleteExpiredToken(ctx, info.ID)
			}
		}
	}
}

// serveCACerts serves GET /cacerts to anyone: the CA certificate is
// public, and joiners check it against their token before trusting it.
func (s *Server) serveCACerts(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Bootstrap == nil || r.URL.Path != bootstrap.PathCACerts {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, apierrors.NewMethodNotSupported(schemaless, r.Method))
		return true
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.cfg.Bootstrap.CA.CertPEM)
	return true
}

// serveBootstrap serves the authenticated bootstrap endpoints, and keeps
// bootstrap token users to them: a token proves only that its holder may
// join, not that it may read or write the cluster's objects.
func (s *Server) serveBootstrap(w http.ResponseWriter, r *http.Request, u *authn.User) bool {
	path := r.URL.Path
	if !strings.HasPrefix(path, bootstrap.PathPrefix) && path != bootstrap.PathStoreMembers {
		if authn.IsBootstrapUser(u) {
			writeError(w, apierrors.NewForbidden(schemaless, "", authn.ErrBootstrapOnly))
			return true
		}
		return false
	}
	if s.cfg.Bootstrap == nil {
		writeError(w, apierrors.NewNotFound(schemaless, path))
		return true
	}
	var err error
	switch path {
	case bootstrap.PathCertificates:
		err = s.serveSign(w, r, u)
	case bootstrap.PathServerBundle:
		err = s.serveServerBundle(w, r, u)
	case bootstrap.PathStoreMembers:
		err = s.serveStoreMembers(w, r, u)
	default:
		err = apierrors.NewNotFound(schemaless, path)
	}
	if err != nil {
		writeError(w, err)
	}
	return true
}

// serveSign signs a node's client or serving certificate request. A
// bootstrap token may ask for any node, as Kubernetes' approver lets
// bootstrappers do; a node may ask only for its own name.
func (s *Server) serveSign(w http.ResponseWriter, r *http.Request, u *authn.User) error {
	if r.Method != http.MethodPost {
		return apierrors.NewMethodNotSupported(schemaless, r.Method)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBootstrapBody))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	var req bootstrap.CertificateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return apierrors.NewBadRequest("apiserver: the certificate request is not JSON: " + err.Error())
	}
	csr, err := bootstrap.ParseCSR([]byte(req.CSR))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	node, err := bootstrap.NodeOf(csr, req.Usage)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	self := u.Name == bootstrap.NodeUserPrefix+node && slices.Contains(u.Groups, bootstrap.NodesGroup)
	if !authn.IsBootstrapUser(u) && !self {
		return apierrors.NewForbidden(schemaless, "", fmt.Errorf("user %q may not get certificates for node %q", u.Name, node))
	}
	certPEM, err := bootstrap.SignCSR(s.cfg.Bootstrap.CA, csr, req.Usage, bootstrap.NodeCertValidity)
	if err != nil {
		return err
	}
	s.log.Info("signed a node certificate", "node", node, "usage", req.Usage, "user", u.Name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, bootstrap.CertificateResponse{Certificate: string(certPEM), CA: string(s.cfg.Bootstrap.CA.CertPEM)})
	return nil
}

// serveServerBundle hands a joining server the CA, key included, and the
// store members to join through; only server tokens may ask.
func (s *Server) serveServerBundle(w http.ResponseWriter, r *http.Request, u *authn.User) error {
	if r.Method != http.MethodGet {
		return apierrors.NewMethodNotSupported(schemaless, r.Method)
	}
	if !slices.Contains(u.Groups, bootstrap.ServersGroup) {
		return apierrors.NewForbidden(schemaless, "", fmt.Errorf("user %q may not join servers: use a server token (a server's DATA/token, or `cairn token create --server`)", u.Name))
	}
	ca := s.cfg.Bootstrap.CA
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return fmt.Errorf("apiserver: encoding the CA key: %w", err)
	}
	members, err := s.storeMembers(r.Context())
	if err != nil {
		return err
	}
	s.log.Warn("handed the cluster CA to a joining server", "user", u.Name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, bootstrap.ServerBundle{
		CACert:       string(ca.CertPEM),
		CAKey:        string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		StoreMembers: members,
	})
	return nil
}

// serveStoreMembers lists the store members for administrators, so that
// tools holding only a kubeconfig find the store (`cairn server remove`).
func (s *Server) serveStoreMembers(w http.ResponseWriter, r *http.Request, u *authn.User) error {
	if r.Method != http.MethodGet {
		return apierrors.NewMethodNotSupported(schemaless, r.Method)
	}
	if !slices.Contains(u.Groups, pki.AdminOrganization) {
		return apierrors.NewForbidden(schemaless, "", fmt.Errorf("user %q may not list the store members (needs group %s)", u.Name, pki.AdminOrganization))
	}
	members, err := s.storeMembers(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bootstrap.StoreMemberList{Members: members})
	return nil
}

// storeMembers lists the store members, or says why it cannot.
func (s *Server) storeMembers(ctx context.Context) ([]bootstrap.StoreMember, error) {
	if s.cfg.Bootstrap.StoreMembers == nil {
		return nil, apierrors.NewServiceUnavailable("this API server does not run beside a store member: ask a server's API")
	}
	members, err := s.cfg.Bootstrap.StoreMembers(ctx)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable("listing the store members: " + err.Error())
	}
	return members, nil
}
