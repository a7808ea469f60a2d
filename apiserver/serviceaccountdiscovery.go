package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// Service account issuer discovery, as Kubernetes serves it: an OpenID
// Connect provider configuration and the key set that verifies the
// tokens, so that a system outside the cluster (a secrets store, a cloud's
// workload identity) can check a pod's token itself. RBAC lets every
// service account read them (system:service-account-issuer-discovery).
const (
	openIDConfigPath = "/.well-known/openid-configuration"
	jwksPath         = "/openid/v1/jwks"
)

// serveIssuerDiscovery answers the two discovery paths; it reports
// whether r was one of them.
func (s *Server) serveIssuerDiscovery(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path != openIDConfigPath && path != jwksPath {
		return false
	}
	cfg := s.cfg.ServiceAccounts
	if cfg == nil {
		writeText(w, http.StatusNotFound, "service account tokens are off on this API server")
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeText(w, http.StatusMethodNotAllowed, "only GET")
		return true
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	if path == jwksPath {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{cfg.Signer.PublicKey()}})
		return true
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                cfg.Signer.Issuer(),
		"jwks_uri":                              s.jwksURI(),
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.ES256)},
	})
	return true
}

// jwksURI is where the key set is published: --service-account-jwks-uri,
// else this server's advertised address.
func (s *Server) jwksURI() string {
	if u := s.cfg.ServiceAccounts.JWKSURI; u != "" {
		return u
	}
	addr := s.cfg.AdvertiseAddress
	if addr == "" {
		addr = s.cfg.Listen
	}
	return "https://" + addr + jwksPath
}
