// Package scheduling holds the rules of scheduling.k8s.io/v1 priority
// classes, which name the priorities pods get at admission.
package scheduling

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// Priorities and names Kubernetes reserves.
const (
	// HighestUserDefinablePriority is the highest value a class not
	// named system-* may have.
	HighestUserDefinablePriority = int32(1000000000)
	// SystemClusterCritical and SystemNodeCritical are the built-in
	// classes every cluster has, for add-ons and node agents.
	SystemClusterCritical      = "system-cluster-critical"
	SystemClusterCriticalValue = 2 * HighestUserDefinablePriority
	SystemNodeCritical         = "system-node-critical"
	SystemNodeCriticalValue    = SystemClusterCriticalValue + 1000
	systemPrefix               = "system-"
)

// SystemClasses returns the built-in priority classes.
func SystemClasses() []*schedulingv1.PriorityClass {
	preempt := corev1.PreemptLowerPriority
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: SystemClusterCritical}, Value: SystemClusterCriticalValue, PreemptionPolicy: &preempt,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
		{ObjectMeta: metav1.ObjectMeta{Name: SystemNodeCritical}, Value: SystemNodeCriticalValue, PreemptionPolicy: &preempt,
			Description: "Used for system critical pods that must not be moved from their current node."},
	}
}

// isSystemClass reports whether pc is one of the built-in classes as
// they are defined.
func isSystemClass(pc *schedulingv1.PriorityClass) bool {
	for _, sys := range SystemClasses() {
		if pc.Name == sys.Name && pc.Value == sys.Value && !pc.GlobalDefault {
			return true
		}
	}
	return false
}

// PriorityClassStrategy returns the rules of priority classes: names
// with the system- prefix are reserved for the built-in classes, other
// values may not exceed HighestUserDefinablePriority, and value and
// preemption policy are fixed once created.
func PriorityClassStrategy() strategy.Funcs[*schedulingv1.PriorityClass] {
	return strategy.Funcs[*schedulingv1.PriorityClass]{
		DefaultFunc: func(pc *schedulingv1.PriorityClass) {
			if pc.PreemptionPolicy == nil {
				p := corev1.PreemptLowerPriority
				pc.PreemptionPolicy = &p
			}
		},
		ValidateFunc: func(_ context.Context, pc *schedulingv1.PriorityClass) field.ErrorList {
			return validatePriorityClass(pc, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, pc, old *schedulingv1.PriorityClass) field.ErrorList {
			errs := validatePriorityClass(pc, old)
			if pc.Value != old.Value {
				errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
			}
			if pc.PreemptionPolicy != nil && old.PreemptionPolicy != nil && *pc.PreemptionPolicy != *old.PreemptionPolicy {
				errs = append(errs, field.Invalid(field.NewPath("preemptionPolicy"), *pc.PreemptionPolicy, "field is immutable"))
			}
			return errs
		},
	}
}

func validatePriorityClass(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	if old != nil {
		oldMeta = &old.ObjectMeta
	}
	errs := core.ValidateObjectMeta(&pc.ObjectMeta, oldMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	switch {
	case strings.HasPrefix(pc.Name, systemPrefix):
		if !isSystemClass(pc) {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with '"+systemPrefix+"' prefix are reserved for system use only"))
		}
	case pc.Value > HighestUserDefinablePriority:
		errs = append(errs, field.Forbidden(field.NewPath("value"), "maximum allowed value of a user defined priority is 1000000000"))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
	}
	return errs
}
