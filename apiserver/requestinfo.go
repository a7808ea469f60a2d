package apiserver

import (
	"net/http"
	"strings"
)

// requestInfo is what the URL and method of a resource request say.
type requestInfo struct {
	Verb        string // get, list, watch, create, update, patch, delete, deletecollection
	Group       string
	Version     string
	Namespace   string
	Resource    string
	Name        string
	Subresource string
}

// parseRequestInfo parses /api/v1/... and /apis/<group>/<version>/...
// resource paths. ok is false for other paths (discovery, health).
func parseRequestInfo(r *http.Request) (info requestInfo, ok bool) {
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.Version = parts[1]
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.Group, info.Version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return info, false
	}
	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
	}
	// namespaces/{ns}/{resource}/... addresses a namespaced resource;
	// namespaces/{name}[/status|/finalize] is the namespace object itself.
	if len(parts) > 2 && parts[0] == "namespaces" && !namespaceSubresources[parts[2]] {
		info.Namespace = parts[1]
		parts = parts[2:]
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = strings.Join(parts[2:], "/")
	}
	info.Verb = verbOf(r, info, watchPath)
	return info, true
}

var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func verbOf(r *http.Request, info requestInfo, watchPath bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if watchPath || isTrue(r.URL.Query().Get("watch")) {
			return "watch"
		}
		if info.Name == "" {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if info.Name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(r.Method)
}

func isTrue(s string) bool { return s == "true" || s == "1" }
