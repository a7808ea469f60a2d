package apiserver

import "net/http"

// subresourceHandler serves a subresource that is not the object itself
// (status and a resource's ObjectSubresources go through the generic verbs).
type subresourceHandler func(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error

// subresourceHandlerFor returns the handler of a subresource (scale,
// binding, eviction, log, exec, attach, portforward, finalize,
// token); each lives in a file of its own.
func subresourceHandlerFor(name string) (subresourceHandler, bool) {
	switch name {
	case "scale":
		return serveScale, true
	case "binding":
		return serveBinding, true
	case "eviction":
		return serveEviction, true
	case "log":
		return servePodLog, true
	case "exec":
		return servePodExec, true
	case "attach":
		return servePodAttach, true
	case "portforward":
		return servePodPortForward, true
	case "finalize":
		return serveFinalize, true
	case "token":
		return serveServiceAccountToken, true
	}
	return nil, false
}
