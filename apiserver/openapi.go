package apiserver

import (
	"net/http"

	"cairn/apiserver/openapi"
)

// newOpenAPI renders the OpenAPI documents of the served resources once, at
// startup; kubectl reads them to validate, patch and explain.
func newOpenAPI(cfg Config) (*openapi.Documents, error) {
	return openapi.Build(servedResources(cfg), openapi.Options{Version: KubernetesVersion})
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/...]; it returns false
// for other paths.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	return s.openapi.Serve(w, r)
}
