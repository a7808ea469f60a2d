package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// NamespaceStrategy returns the rules of namespaces: a new namespace is
// Active, carries the "kubernetes" finalizer (which the namespace
// controller removes once the contents are gone) and the
// kubernetes.io/metadata.name label that selectors rely on.
func NamespaceStrategy() strategy.Funcs[*corev1.Namespace] {
	return strategy.Funcs[*corev1.Namespace]{
		DefaultFunc: func(ns *corev1.Namespace) {
			if ns.Name != "" {
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[corev1.LabelMetadataName] = ns.Name
			}
			if ns.Status.Phase == "" {
				ns.Status.Phase = corev1.NamespaceActive
			}
		},
		PrepareForCreateFunc: func(_ context.Context, ns *corev1.Namespace) {
			ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			for _, f := range ns.Spec.Finalizers {
				if f == corev1.FinalizerKubernetes {
					return
				}
			}
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		},
		PrepareForUpdateFunc: func(_ context.Context, ns, old *corev1.Namespace) {
			// spec.finalizers changes only through namespaces/finalize.
			ns.Spec.Finalizers = old.Spec.Finalizers
			ns.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, ns, old *corev1.Namespace) {
			ns.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(ns, old)
		},
		ValidateFunc: func(_ context.Context, ns *corev1.Namespace) field.ErrorList {
			return validateNamespace(ns, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, ns, old *corev1.Namespace) field.ErrorList {
			errs := validateNamespace(ns, &old.ObjectMeta)
			return append(errs, validateNamespacePhase(ns)...)
		},
	}
}

// NamespaceFinalizeStrategy returns the rules of the namespaces/finalize
// subresource, through which the namespace controller removes its
// finalizer from spec.finalizers once the namespace is empty. As in
// Kubernetes, the body replaces spec (and the metadata a client may
// write); the status stays.
func NamespaceFinalizeStrategy() strategy.Funcs[*corev1.Namespace] {
	main := NamespaceStrategy()
	return strategy.Funcs[*corev1.Namespace]{
		DefaultFunc: main.DefaultFunc,
		PrepareForUpdateFunc: func(_ context.Context, ns, old *corev1.Namespace) {
			ns.Status = old.Status
		},
		ValidateUpdateFunc: main.ValidateUpdateFunc,
	}
}

func validateNamespace(ns *corev1.Namespace, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&ns.ObjectMeta, old, false, apimachineryvalidation.ValidateNamespaceName)
	p := field.NewPath("spec", "finalizers")
	for _, f := range ns.Spec.Finalizers {
		errs = append(errs, apimachineryvalidation.ValidateFinalizerName(string(f), p)...)
		errs = append(errs, validateKubeFinalizers([]string{string(f)}, p)...)
	}
	return errs
}

// validateNamespacePhase keeps the phase in step with deletion: the
// namespace controller only empties namespaces that are Terminating.
func validateNamespacePhase(ns *corev1.Namespace) field.ErrorList {
	p := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}
