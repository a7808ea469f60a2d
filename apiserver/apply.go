package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// applyOptions are the query parameters of a server-side apply.
type applyOptions struct {
	manager string
	force   bool
}

// isApply reports whether r is a server-side apply.
func isApply(r *http.Request) bool {
	return r.Method == http.MethodPatch && types.PatchType(mediaTypeOnly(r.Header.Get("Content-Type"))) == types.ApplyYAMLPatchType
}

// patchOptions checks the options of a patch as Kubernetes does: an apply
// names its manager, and only an apply may force.
func patchOptions(r *http.Request, apply bool) (applyOptions, error) {
	q := r.URL.Query()
	opts := applyOptions{manager: q.Get("fieldManager")}
	var errs field.ErrorList
	if f, ok := q["force"]; ok {
		if !apply {
			errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
		} else if len(f) > 0 && f[0] != "" {
			force, err := strconv.ParseBool(f[0])
			if err != nil {
				return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid force %q: %v", f[0], err))
			}
			opts.force = force
		}
	}
	if apply && opts.manager == "" {
		// kubectl sends "kubectl"; controllers must name themselves.
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	if err := optionsInvalid("PatchOptions", errs); err != nil {
		return opts, err
	}
	return opts, checkFieldManager(r, "PatchOptions")
}

// apply serves a server-side apply (application/apply-patch+yaml): the
// applied configuration is merged into the live object by field
// ownership, and the object is created when it does not exist yet. The
// result goes through the same defaults, validation and compare-and-swap
// as any update.
func (h *restHandler) apply(w http.ResponseWriter, r *http.Request, info requestInfo, body []byte) error {
	opts, err := patchOptions(r, true)
	if err != nil {
		return err
	}
	patch, err := h.decodeApply(body, strictFields(r))
	if err != nil {
		return err
	}
	fm, err := h.fieldManager(info.Subresource)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	applyTo := func(live runtime.Object) (runtime.Object, error) {
		out, err := fm.Apply(live, patch.DeepCopy(), opts.manager, opts.force)
		if err != nil {
			if _, ok := err.(apierrors.APIStatus); ok {
				return nil, err // conflicts (409) and bad requests
			}
			return nil, apierrors.NewInternalError(err)
		}
		return out, nil
	}
	ctx := r.Context()
	// One retry covers a create racing ours: the object then exists, and
	// the apply merges into it.
	for attempt := 0; ; attempt++ {
		out, _, err := h.updateWith(ctx, r, info, false, applyTo)
		if !apierrors.IsNotFound(err) || info.Subresource != "" {
			if err != nil {
				return err
			}
			return h.respond(w, r, http.StatusOK, out)
		}
		if patch.GetResourceVersion() != "" {
			return apierrors.NewConflict(h.res.GVR.GroupResource(), info.Name,
				fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		obj, err := applyTo(h.res.New())
		if err != nil {
			return err
		}
		m, err := metaOf(obj)
		if err != nil {
			return err
		}
		if m.GetName() != info.Name {
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
		}
		out, err = h.createObject(ctx, r, info.Namespace, obj, false)
		if apierrors.IsAlreadyExists(err) && attempt == 0 {
			continue
		}
		if err != nil {
			return err
		}
		return h.respond(w, r, http.StatusCreated, out)
	}
}

// decodeApply reads an applied configuration: YAML (or JSON) of an object
// of the resource's kind, checked against the type's schema so that a
// wrong or unknown field is the client's error, said plainly. strict also
// refuses duplicate fields.
func (h *restHandler) decodeApply(body []byte, strict bool) (*unstructured.Unstructured, error) {
	toJSON := yaml.YAMLToJSON
	if strict {
		toJSON = yaml.YAMLToJSONStrict
	}
	js, err := toJSON(body)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	var content map[string]any
	if err := jsonUnmarshal(js, &content); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: the applied configuration must be an object: %v", err))
	}
	if content == nil {
		return nil, apierrors.NewBadRequest("error decoding YAML: the applied configuration is empty")
	}
	patch := &unstructured.Unstructured{Object: content}
	if gvk, want := patch.GroupVersionKind(), h.res.GVK(); gvk != want {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the applied configuration is a %q of %q, not a %q of %q: set apiVersion and kind",
			gvk.Kind, gvk.GroupVersion().String(), want.Kind, want.GroupVersion().String()))
	}
	if patch.GetManagedFields() != nil {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	if _, err := typeConverter.ObjectToTyped(patch); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the applied configuration is not a valid %s: %v", h.res.Kind, err))
	}
	// The schema leaves some fields untyped (timestamps, quantities):
	// decoding the configuration into the Go type catches the rest.
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(patch.Object, h.res.New()); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the applied configuration is not a valid %s: %v", h.res.Kind, err))
	}
	return patch, nil
}
