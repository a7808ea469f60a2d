package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"cairn/apiserver/printers"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes err as a Kubernetes Status; errors that are not API
// errors become 500s.
func writeError(w http.ResponseWriter, err error) {
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	// client-go retries a 429 or 5xx that carries Retry-After.
	if d := status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	writeJSON(w, code, &status)
}

var schemaless = schema.GroupResource{}

func jsonUnmarshal(b []byte, v any) error { return utiljson.Unmarshal(b, v) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// respond encodes obj in the media type the client asked for, as a Table
// or as object metadata when it asked for that.
func (h *restHandler) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) error {
	media := negotiateOutput(r)
	obj, err := h.transform(r, media, obj)
	if err != nil {
		return err
	}
	return writeObject(w, media.mediaType, h.res.GVR.GroupVersion(), code, obj)
}

// writeObject encodes obj as an object of gv in mediaType and sends it
// with code.
func writeObject(w http.ResponseWriter, mediaType string, gv schema.GroupVersion, code int, obj runtime.Object) error {
	enc, err := encoderFor(mediaType, gv)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		return apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// transform turns obj into what media asks for instead of the object
// itself: a Table, or its metadata.
func (h *restHandler) transform(r *http.Request, media outputMedia, obj runtime.Object) (runtime.Object, error) {
	switch media.as {
	case asTable:
		return h.table(r, obj)
	case asPartial, asPartialList:
		return asPartialMetadata(obj, media.as)
	}
	return obj, nil
}

// table renders obj (an object or a list) with the resource's columns.
func (h *restHandler) table(r *http.Request, obj runtime.Object) (*metav1.Table, error) {
	table, err := printers.ToTable(obj, true, time.Now())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := printers.SetIncludeObject(table, metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if l, ok := obj.(metav1.ListInterface); ok {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	} else if m, err := metaOf(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

func extractList(list runtime.Object) ([]runtime.Object, error) { return meta.ExtractList(list) }
