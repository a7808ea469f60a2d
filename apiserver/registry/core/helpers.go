package core

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// metaPath is where every object's metadata errors point.
var metaPath = field.NewPath("metadata")

// ValidateMeta checks an object's metadata on create: name (with nameFn),
// namespace presence, labels, annotations, finalizers and owner references.
func ValidateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, metaPath)
	return append(errs, validateKubeFinalizers(meta.Finalizers, metaPath.Child("finalizers"))...)
}

// ValidateObjectMeta checks metadata on create (old is nil) or on update,
// so that one validation function serves both without reporting a bad
// label twice.
func ValidateObjectMeta(meta, old *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	if old == nil {
		return ValidateMeta(meta, namespaced, nameFn)
	}
	return ValidateMetaUpdate(meta, old)
}

// ValidateMetaUpdate checks metadata on update: name, namespace, uid and
// creationTimestamp are immutable, resourceVersion is set, and it also
// re-checks labels and annotations as on create.
func ValidateMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(meta, old, metaPath)
	return append(errs, validateKubeFinalizers(meta.Finalizers, metaPath.Child("finalizers"))...)
}

// standardFinalizers are the finalizer names that need no domain prefix.
var standardFinalizers = sets.New(string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)

// validateKubeFinalizers refuses unprefixed finalizer names other than the
// standard ones, so that two controllers cannot collide on a bare name.
func validateKubeFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers.Has(f) {
			errs = append(errs, field.Invalid(fldPath, f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// ValidateNonnegative reports value < 0 at fldPath, as Kubernetes does for
// counts and durations.
func ValidateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(value, fldPath)
}

// validateDNS1123Label reports each reason value is not a DNS-1123 label.
func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateDNS1123Subdomain reports each reason value is not a DNS-1123 subdomain.
func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateNameFunc applies a name validator to a reference to another
// object (a service account, a node), as Kubernetes does.
func validateNameFunc(fn apimachineryvalidation.ValidateNameFunc, name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// validatePortNum reports a port outside 1-65535.
func validatePortNum(port int32, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(fldPath, port, msg))
	}
	return errs
}

// validateIP reports a value that is not an IP address, with the strict
// rules Kubernetes applies to its IP fields (no leading zeros, no IPv4 in
// IPv6).
func validateIP(value string, fldPath *field.Path) field.ErrorList {
	return validation.IsValidIPForLegacyField(fldPath, value, true, nil)
}

// validateCIDR reports a value that is not a CIDR.
func validateCIDR(value string, fldPath *field.Path) field.ErrorList {
	return validation.IsValidCIDRForLegacyField(fldPath, value, true, nil)
}

// inclusiveRange reports value outside [lo, hi].
func inclusiveRange(value, lo, hi int64, fldPath *field.Path) field.ErrorList {
	if value < lo || value > hi {
		return field.ErrorList{field.Invalid(fldPath, value, fmt.Sprintf("must be between %d and %d, inclusive", lo, hi))}
	}
	return nil
}

// sortedKeys returns m's keys in order, so errors come out the same way
// every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
