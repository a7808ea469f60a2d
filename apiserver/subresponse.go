package apiserver

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// respondAs encodes obj as an object of gv, for subresources whose kind
// is not the resource's own (autoscaling/v1 Scale of an apps/v1
// Deployment); a Table or the metadata is sent when the client asked for
// one, as `kubectl get deploy web --subresource=scale` does.
func (h *restHandler) respondAs(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, gv schema.GroupVersion) error {
	media := negotiateOutput(r)
	obj, err := h.transform(r, media, obj)
	if err != nil {
		return err
	}
	return writeObject(w, media.mediaType, gv, code, obj)
}

// respondSuccess answers a create-only subresource (binding, eviction)
// with the Status Kubernetes sends: Success, 201 Created.
func (h *restHandler) respondSuccess(w http.ResponseWriter, r *http.Request) error {
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Code:     http.StatusCreated,
	}
	return h.respondAs(w, withoutTable(r), http.StatusCreated, st, schema.GroupVersion{Version: "v1"})
}

// withoutTable drops a Table request: a Status is never printed as rows.
func withoutTable(r *http.Request) *http.Request {
	if !negotiateOutput(r).table() {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Set("Accept", mediaJSON)
	return r
}
