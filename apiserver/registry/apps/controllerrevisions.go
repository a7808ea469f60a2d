package apps

import (
	"bytes"
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// ControllerRevisionStrategy returns the rules of controller revisions,
// the history StatefulSets and DaemonSets keep: data is required and
// immutable, the revision number non-negative. Their labels, annotations
// and owners may change (controllers adopt and relabel them).
func ControllerRevisionStrategy() strategy.Funcs[*appsv1.ControllerRevision] {
	return strategy.Funcs[*appsv1.ControllerRevision]{
		ValidateFunc: func(_ context.Context, cr *appsv1.ControllerRevision) field.ErrorList {
			return validateControllerRevision(cr, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, cr, old *appsv1.ControllerRevision) field.ErrorList {
			errs := validateControllerRevision(cr, old)
			if !sameData(cr.Data, old.Data) {
				errs = append(errs, field.Invalid(field.NewPath("data"), field.OmitValueType{}, apimachineryvalidation.FieldImmutableErrorMsg))
			}
			return errs
		},
	}
}

func validateControllerRevision(cr, old *appsv1.ControllerRevision) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	if old != nil {
		oldMeta = &old.ObjectMeta
	}
	errs := core.ValidateObjectMeta(&cr.ObjectMeta, oldMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	if len(cr.Data.Raw) == 0 && cr.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, core.ValidateNonnegative(cr.Revision, field.NewPath("revision"))...)
}

// sameData compares revision data as JSON values: a client that reads a
// revision and writes it back (a label change, an adoption) may send the
// same document spaced differently.
func sameData(a, b runtime.RawExtension) bool {
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a.Raw) != nil || json.Compact(&cb, b.Raw) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
