package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// NodeStrategy returns the rules of nodes. Unlike most resources a node
// may carry its status on create: the agent registers with its capacity.
func NodeStrategy() strategy.Funcs[*corev1.Node] {
	return strategy.Funcs[*corev1.Node]{
		DefaultFunc: func(n *corev1.Node) {
			if n.Status.Allocatable == nil && n.Status.Capacity != nil {
				n.Status.Allocatable = n.Status.Capacity.DeepCopy()
			}
		},
		PrepareForUpdateFunc: func(_ context.Context, n, old *corev1.Node) {
			n.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, n, old *corev1.Node) {
			n.Spec = old.Spec
		},
		ValidateFunc: func(_ context.Context, n *corev1.Node) field.ErrorList {
			return validateNode(n, nil)
		},
		ValidateUpdateFunc: validateNodeUpdate,
	}
}

func validateNode(n *corev1.Node, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&n.ObjectMeta, old, false, apimachineryvalidation.NameIsDNSSubdomain)
	specPath := field.NewPath("spec")
	errs = append(errs, validateTaints(n.Spec.Taints, specPath.Child("taints"))...)
	cidrPath := specPath.Child("podCIDRs")
	for i, c := range n.Spec.PodCIDRs {
		errs = append(errs, validateCIDR(c, cidrPath.Index(i))...)
	}
	if len(n.Spec.PodCIDRs) > 2 {
		errs = append(errs, field.Invalid(cidrPath, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
	}
	if n.Spec.PodCIDR != "" && (len(n.Spec.PodCIDRs) == 0 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR) {
		errs = append(errs, field.Invalid(specPath.Child("podCIDR"), n.Spec.PodCIDR, "must match podCIDRs[0]"))
	}
	statusPath := field.NewPath("status")
	for _, name := range sortedNames(n.Status.Capacity) {
		q := n.Status.Capacity[name]
		errs = append(errs, validateQuantity(string(name), q, statusPath.Child("capacity").Key(string(name)))...)
	}
	for _, name := range sortedNames(n.Status.Allocatable) {
		q := n.Status.Allocatable[name]
		errs = append(errs, validateQuantity(string(name), q, statusPath.Child("allocatable").Key(string(name)))...)
	}
	for i, a := range n.Status.Addresses {
		if a.Type == "" {
			errs = append(errs, field.Required(statusPath.Child("addresses").Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		idx := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, idx.Child("key"))...)
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(idx.Child("value"), t.Value, msg))
		}
		errs = append(errs, validateTaintEffect(t.Effect, false, idx.Child("effect"))...)
		k := keyEffect{t.Key, t.Effect}
		if seen[k] {
			errs = append(errs, field.Duplicate(idx, fmt.Sprintf("%s:%s", t.Key, t.Effect)))
		}
		seen[k] = true
	}
	return errs
}

func validateNodeUpdate(_ context.Context, n, old *corev1.Node) field.ErrorList {
	errs := validateNode(n, &old.ObjectMeta)
	// Pods already run with addresses from the old range.
	if len(old.Spec.PodCIDRs) > 0 && !apiequality.Semantic.DeepEqual(n.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && n.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}
