package core

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardContainerResources are the unprefixed names a container may
// request; anything else must be a domain-prefixed extended resource.
var standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")

// ValidateResourceRequirements checks resource names, that quantities are
// not negative, and that each request is at most its limit (equal to it for
// extended resources, which cannot be overcommitted).
func ValidateResourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	for _, name := range sortedNames(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateQuantity(string(name), q, p)...)
	}
	for _, name := range sortedNames(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateQuantity(string(name), q, p)...)
		limit, hasLimit := r.Limits[name]
		switch {
		case hasLimit && !overcommitAllowed(string(name)) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !overcommitAllowed(string(name)):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func isHugePages(name string) bool { return strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) }

// isNative reports a resource Kubernetes itself defines.
func isNative(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

func overcommitAllowed(name string) bool { return isNative(name) && !isHugePages(name) }

func validateContainerResourceName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(name, "/") {
		if !standardContainerResources.Has(name) && !isHugePages(name) {
			errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNative(name) && strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) {
		errs = append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateQuantity(name string, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than or equal to 0")}
	}
	if !isNative(name) {
		if q.MilliValue()%1000 != 0 {
			return field.ErrorList{field.Invalid(fldPath, q.String(), "must be an integer")}
		}
	}
	return nil
}
