package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// maxFieldManagerLength bounds a manager's name, as Kubernetes does.
const maxFieldManagerLength = 128

// typeConverter turns the served types into structured-merge-diff values
// and back, with the schema client-go ships for every built-in type. It
// is only read after it is built.
var typeConverter = applyconfigurations.NewTypeConverter(apiScheme)

// fieldManager returns the field manager of writes to sub ("" for the
// main resource, "status", "ephemeralcontainers"...). It is built for
// each request, in a few microseconds next to the tens that tracking a
// write takes, so restHandler holds no lazily built state; the schema
// behind it is parsed once, on first use.
func (h *restHandler) fieldManager(sub string) (*managedfields.FieldManager, error) {
	fm, err := managedfields.NewDefaultFieldManager(typeConverter, apiScheme, h.res.Strategy, apiScheme,
		h.res.GVK(), h.res.GVR.GroupVersion(), sub, h.resetFields(sub))
	if err != nil {
		return nil, fmt.Errorf("apiserver: field manager of %s: %w", h.res.GVR.GroupResource(), err)
	}
	return fm, nil
}

// resetFields are the fields a write to sub may not set, which its
// manager must therefore never own: status through the main resource,
// everything but status through the status subresource, everything but
// its part through an ObjectSubresource (spec.ephemeralContainers for
// pods/ephemeralcontainers). The strategy throws those changes away, so
// owning them would make an applier claim values it never wrote.
func (h *restHandler) resetFields(sub string) map[fieldpath.APIVersion]fieldpath.Filter {
	var filter fieldpath.Filter
	objectSub, isObjectSub := h.res.ObjectSubresource(sub)
	switch {
	case sub == "" && h.res.HasSubresource("status"):
		filter = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
	case sub == "status" && h.res.HasSubresource("status"):
		filter = fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("status"))
	case isObjectSub:
		parts := make([]any, len(objectSub.Fields))
		for i, f := range objectSub.Fields {
			parts[i] = f
		}
		filter = fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie(parts...))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(h.res.GVR.GroupVersion().String()): filter}
}

// trackUpdate records in obj's managedFields what a create, update or
// non-apply patch changed from live, under the request's manager. live is
// an empty object for a create. A failure to track never fails the write:
// obj then keeps live's managedFields, as Kubernetes does.
func (h *restHandler) trackUpdate(r *http.Request, sub string, live, obj runtime.Object) runtime.Object {
	fm, err := h.fieldManager(sub)
	if err != nil {
		h.s.log.Error("managedFields not tracked", "resource", h.res.GVR.GroupResource().String(), "err", err)
		return obj
	}
	return fm.UpdateNoErrors(live, obj, managerName(r))
}

// managerName is who a write is recorded under: the fieldManager query
// parameter, or else the client's User-Agent up to its first "/" (so
// "kubectl/v1.33.0 (linux/amd64)" is "kubectl"), as Kubernetes names it.
func managerName(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.Header.Get("User-Agent"), "/")
	var b bytes.Buffer
	for _, c := range ua {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > maxFieldManagerLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// checkFieldManager validates the fieldManager query parameter of a
// write; optionsKind names the options in the 422, as Kubernetes does
// ("PatchOptions").
func checkFieldManager(r *http.Request, optionsKind string) error {
	m := r.URL.Query().Get("fieldManager")
	path := field.NewPath("fieldManager")
	var errs field.ErrorList
	if len(m) > maxFieldManagerLength {
		errs = append(errs, field.TooLong(path, m, maxFieldManagerLength))
	}
	for _, c := range m {
		if !unicode.IsPrint(c) {
			errs = append(errs, field.Invalid(path, m, "invalid characters, all characters must be printable"))
			break
		}
	}
	return optionsInvalid(optionsKind, errs)
}

// optionsInvalid is Kubernetes' 422 for bad request options, or nil.
func optionsInvalid(optionsKind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind(optionsKind).GroupKind(), "", errs)
}
