package apiserver

import (
	"bytes"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	enc, err := encoderFor(media.mediaType, gv)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		return apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", media.mediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
	return nil
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
