package core

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validFieldPaths are the pod fields an env var may read, besides
// metadata.labels and metadata.annotations (whole or by key).
var validFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// validateEnv checks env var names (any printable ASCII but "=") and sources.
func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		idx := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(idx.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarSource(ev, idx.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarSource(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	src := ev.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if src.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(src.FieldRef, fldPath.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		n++
		if src.ResourceFieldRef.Resource == "" {
			errs = append(errs, field.Required(fldPath.Child("resourceFieldRef", "resource"), ""))
		}
	}
	if src.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeyRef(src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if src.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeyRef(src.SecretKeyRef.Name, src.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if src.FileKeyRef != nil {
		n++
	}
	if ev.Value != "" && n != 0 {
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fs.APIVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), ""))
	}
	p := fs.FieldPath
	switch {
	case p == "":
		errs = append(errs, field.Required(fldPath.Child("fieldPath"), ""))
	case strings.HasPrefix(p, "metadata.labels[") || strings.HasPrefix(p, "metadata.annotations["):
		if !strings.HasSuffix(p, "']") || !strings.Contains(p, "['") {
			errs = append(errs, field.Invalid(fldPath.Child("fieldPath"), p, "error converting fieldPath: invalid subscript"))
		}
	case p == "metadata.labels" || p == "metadata.annotations":
	default:
		if !sets.New(validFieldPaths...).Has(p) {
			errs = append(errs, field.NotSupported(fldPath.Child("fieldPath"), p, append([]string{"metadata.annotations", "metadata.labels"}, validFieldPaths...)))
		}
	}
	return errs
}

func validateKeyRef(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

func validateEnvFrom(envFrom []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range envFrom {
		idx := fldPath.Index(i)
		n := 0
		if ef.ConfigMapRef != nil {
			n++
			if ef.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(idx.Child("configMapRef", "name"), ""))
			}
		}
		if ef.SecretRef != nil {
			n++
			if ef.SecretRef.Name == "" {
				errs = append(errs, field.Required(idx.Child("secretRef", "name"), ""))
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(idx, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(idx, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}
