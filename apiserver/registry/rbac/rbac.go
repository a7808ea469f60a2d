// Package rbac holds the rules of the rbac.authorization.k8s.io/v1
// resources: roles, cluster roles and their bindings. They are only stored
// and served here; enforcement is the authorizer's business.
package rbac

import (
	"context"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// validateName allows the colons of names like "system:node": RBAC
// names are path segments, not DNS names.
func validateName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// RoleStrategy returns the rules of roles.
func RoleStrategy() strategy.Funcs[*rbacv1.Role] {
	validate := func(r *rbacv1.Role, old *metav1.ObjectMeta) field.ErrorList {
		errs := core.ValidateObjectMeta(&r.ObjectMeta, old, true, validateName)
		return append(errs, validateRules(r.Rules, true)...)
	}
	return strategy.Funcs[*rbacv1.Role]{
		ValidateFunc: func(_ context.Context, r *rbacv1.Role) field.ErrorList { return validate(r, nil) },
		ValidateUpdateFunc: func(_ context.Context, r, old *rbacv1.Role) field.ErrorList {
			return validate(r, &old.ObjectMeta)
		},
	}
}

// ClusterRoleStrategy returns the rules of cluster roles. An aggregated
// cluster role has its rules filled in by a controller from the roles its
// selectors match.
func ClusterRoleStrategy() strategy.Funcs[*rbacv1.ClusterRole] {
	validate := func(r *rbacv1.ClusterRole, old *metav1.ObjectMeta) field.ErrorList {
		errs := core.ValidateObjectMeta(&r.ObjectMeta, old, false, validateName)
		errs = append(errs, validateRules(r.Rules, false)...)
		if a := r.AggregationRule; a != nil {
			p := field.NewPath("aggregationRule", "clusterRoleSelectors")
			if len(a.ClusterRoleSelectors) == 0 {
				errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
			}
			for i := range a.ClusterRoleSelectors {
				errs = append(errs, metav1validation.ValidateLabelSelector(&a.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
			}
		}
		return errs
	}
	return strategy.Funcs[*rbacv1.ClusterRole]{
		ValidateFunc: func(_ context.Context, r *rbacv1.ClusterRole) field.ErrorList { return validate(r, nil) },
		ValidateUpdateFunc: func(_ context.Context, r, old *rbacv1.ClusterRole) field.ErrorList {
			return validate(r, &old.ObjectMeta)
		},
	}
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// defaultBinding fills the API group of the role and of user and group
// subjects, which is always rbac.authorization.k8s.io.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// RoleBindingStrategy returns the rules of role bindings: the role they
// grant never changes (delete and recreate instead, so that granting is
// always a deliberate act).
func RoleBindingStrategy() strategy.Funcs[*rbacv1.RoleBinding] {
	validate := func(b *rbacv1.RoleBinding, old *metav1.ObjectMeta) field.ErrorList {
		errs := core.ValidateObjectMeta(&b.ObjectMeta, old, true, validateName)
		errs = append(errs, validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})...)
		return append(errs, validateSubjects(b.Subjects, true)...)
	}
	return strategy.Funcs[*rbacv1.RoleBinding]{
		DefaultFunc:  func(b *rbacv1.RoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) },
		ValidateFunc: func(_ context.Context, b *rbacv1.RoleBinding) field.ErrorList { return validate(b, nil) },
		ValidateUpdateFunc: func(_ context.Context, b, old *rbacv1.RoleBinding) field.ErrorList {
			errs := validate(b, &old.ObjectMeta)
			return append(errs, validateRoleRefUpdate(b.RoleRef, old.RoleRef)...)
		},
	}
}

// ClusterRoleBindingStrategy returns the rules of cluster role bindings.
func ClusterRoleBindingStrategy() strategy.Funcs[*rbacv1.ClusterRoleBinding] {
	validate := func(b *rbacv1.ClusterRoleBinding, old *metav1.ObjectMeta) field.ErrorList {
		errs := core.ValidateObjectMeta(&b.ObjectMeta, old, false, validateName)
		errs = append(errs, validateRoleRef(b.RoleRef, []string{"ClusterRole"})...)
		return append(errs, validateSubjects(b.Subjects, false)...)
	}
	return strategy.Funcs[*rbacv1.ClusterRoleBinding]{
		DefaultFunc:  func(b *rbacv1.ClusterRoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) },
		ValidateFunc: func(_ context.Context, b *rbacv1.ClusterRoleBinding) field.ErrorList { return validate(b, nil) },
		ValidateUpdateFunc: func(_ context.Context, b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			errs := validate(b, &old.ObjectMeta)
			return append(errs, validateRoleRefUpdate(b.RoleRef, old.RoleRef)...)
		},
	}
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validateName(ref.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateRoleRefUpdate(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
			if s.Name != "" && strings.TrimSpace(s.Name) == "" {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, strings.ToLower(s.Kind)+" name cannot be whitespace only"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}
