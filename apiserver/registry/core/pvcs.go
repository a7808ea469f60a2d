package core

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/internal/strategy"
)

var accessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
}

// PersistentVolumeClaimStrategy returns the rules of claims: Pending when
// created, and a spec fixed after creation but for a bigger storage
// request and the binder setting volumeName once.
func PersistentVolumeClaimStrategy() strategy.Funcs[*corev1.PersistentVolumeClaim] {
	return strategy.Funcs[*corev1.PersistentVolumeClaim]{
		DefaultFunc: DefaultPersistentVolumeClaim,
		PrepareForCreateFunc: func(_ context.Context, pvc *corev1.PersistentVolumeClaim) {
			pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		PrepareForUpdateFunc: func(_ context.Context, pvc, old *corev1.PersistentVolumeClaim) {
			pvc.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, pvc, old *corev1.PersistentVolumeClaim) {
			pvc.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(pvc, old)
		},
		ValidateFunc: func(_ context.Context, pvc *corev1.PersistentVolumeClaim) field.ErrorList {
			return validatePVC(pvc, nil)
		},
		ValidateUpdateFunc: validatePVCUpdate,
	}
}

// DefaultPersistentVolumeClaim applies a claim's defaults; statefulsets
// apply it to their volume claim templates too.
func DefaultPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

func validatePVC(pvc *corev1.PersistentVolumeClaim, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&pvc.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, ValidatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

// ValidatePersistentVolumeClaimSpec checks access modes, the storage
// request, the selector, the storage class name and the volume mode.
func ValidatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	for _, m := range spec.AccessModes {
		if !sets.New(accessModes...).Has(m) {
			errs = append(errs, field.NotSupported(fldPath.Child("accessModes"), m, accessModes))
		}
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(*spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}))
	}
	return errs
}

func validatePVCUpdate(_ context.Context, pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validatePVC(pvc, &old.ObjectMeta)
	// Claims are fixed so quota and limits cannot be gamed; the binder
	// sets volumeName once and a bound claim may grow.
	spec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = spec.VolumeName
	}
	if spec.Resources.Requests != nil {
		if q, ok := oldSpec.Resources.Requests[corev1.ResourceStorage]; ok {
			spec.Resources.Requests[corev1.ResourceStorage] = q
		}
	}
	oldSpec.VolumeAttributesClassName = spec.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n  changed: %s",
			strings.Join(changedFields(*oldSpec, *spec, "spec"), ", "))))
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return errs
}
