package apiserver

import (
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// maxJSONPatchOps bounds a JSON patch, as Kubernetes does, so a request
// cannot make the server do unbounded work.
const maxJSONPatchOps = 10000

// applyPatch applies a patch of the given type to the JSON form of the
// current object. dataStruct (an empty object of the resource's type)
// drives strategic merge, through the Go struct's patch tags.
func applyPatch(pt types.PatchType, current, patch []byte, dataStruct runtime.Object) (out []byte, err error) {
	// The patch libraries panic on some malformed patches (a nil document
	// in a JSON patch operation, for one): a client's bad patch must be a
	// client error, never a crash.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, apierrors.NewBadRequest(fmt.Sprintf("the %s could not be applied: %v", pt, p))
		}
	}()
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOps {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the json patch has %d operations, exceeding the maximum of %d", len(p), maxJSONPatchOps))
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schemaless, "", err.Error(), 0, false)
		}
		return out, nil
	case types.MergePatchType:
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	case types.StrategicMergePatchType:
		schema, err := strategicpatch.NewPatchMetaFromStruct(dataStruct)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var patchMap map[string]any
		if err := jsonUnmarshal(patch, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as a strategic merge patch: %v", err))
		}
		var currentMap map[string]any
		if err := jsonUnmarshal(current, &currentMap); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(currentMap, patchMap, schema)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return jsonMarshal(out)
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		// Objects, their status and the subresources served as the
		// object (pods/ephemeralcontainers) are applied through the
		// field manager (apply.go), before any patch is made; what
		// reaches here is a subresource such as scale.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "server-side apply is served on objects and their status, not on this subresource: patch it with " + string(types.MergePatchType) + " instead",
		}}
	}
	return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the patch type %q is not supported: use %s, %s or %s", pt, types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType),
	}}
}
