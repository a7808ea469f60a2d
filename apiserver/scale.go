package apiserver

import (
	"fmt"
	"net/http"

	"cairn/apiserver/storage"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// serveScale serves the autoscaling/v1 scale subresource of deployments,
// replica sets and stateful sets. Reads build a Scale from the object;
// writes change only spec.replicas and go through the main object's
// compare-and-swap update, so its strategy and validation still apply
// and a concurrent edit of the object is never lost.
func serveScale(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if h.res.Scale == nil {
		return apierrors.NewNotFound(h.res.GVR.GroupResource(), info.Name+"/scale")
	}
	switch info.Verb {
	case "get":
		obj, err := h.store.Get(r.Context(), h.key(info.Namespace, info.Name), storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
		if err != nil {
			return err
		}
		return h.respondScale(w, r, obj)
	case "update":
		body, err := h.readBody(r)
		if err != nil {
			return err
		}
		want := &autoscalingv1.Scale{}
		if err := decodeBody(r, body, want, strictFields(r)); err != nil {
			return err
		}
		return h.writeScale(w, r, info, func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error) { return want, nil })
	case "patch":
		body, err := h.readBody(r)
		if err != nil {
			return err
		}
		return h.writeScale(w, r, info, func(current *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			return patchScale(r, current, body)
		})
	}
	return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" scale")
}

// writeScale updates the object's replicas to what next makes of its
// current scale. A resourceVersion in the requested Scale is a
// precondition on the object, as in Kubernetes; without one the update is
// unconditional, which is what `kubectl scale` relies on.
func (h *restHandler) writeScale(w http.ResponseWriter, r *http.Request, info requestInfo, next func(current *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) error {
	out, _, err := h.updateWith(r.Context(), r, info, false, func(obj runtime.Object) (runtime.Object, error) {
		current, err := h.res.Scale.Scale(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		want, err := next(current)
		if err != nil {
			return nil, err
		}
		if want.Name != info.Name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", want.Name, info.Name))
		}
		if errs := h.res.Scale.ValidateScale(want); len(errs) > 0 {
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), info.Name, errs)
		}
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		// updateWith checks a non-empty resourceVersion and uid against
		// the stored object's.
		m.SetResourceVersion(want.ResourceVersion)
		if want.UID != "" {
			m.SetUID(want.UID)
		}
		if err := h.res.Scale.SetReplicas(obj, want.Spec.Replicas); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	return h.respondScale(w, r, out)
}

func (h *restHandler) respondScale(w http.ResponseWriter, r *http.Request, obj runtime.Object) error {
	scale, err := h.res.Scale.Scale(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return h.respondAs(w, r, http.StatusOK, scale, autoscalingv1.SchemeGroupVersion)
}

// patchScale applies a patch to the JSON form of the current Scale, as
// Kubernetes patches subresources: the patch speaks of Scale fields
// (spec.replicas), not of the object's.
func patchScale(r *http.Request, current *autoscalingv1.Scale, patch []byte) (*autoscalingv1.Scale, error) {
	currentJSON, err := jsonMarshal(current)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	pt := types.PatchType(mediaTypeOnly(r.Header.Get("Content-Type")))
	patched, err := applyPatch(pt, currentJSON, patch, &autoscalingv1.Scale{})
	if err != nil {
		return nil, err
	}
	out := &autoscalingv1.Scale{}
	pr := r.Clone(r.Context())
	pr.Header.Set("Content-Type", mediaJSON)
	if err := decodeBody(pr, patched, out, strictFields(r)); err != nil {
		return nil, err
	}
	return out, nil
}
