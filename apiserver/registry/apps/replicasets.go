package apps

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// ReplicaSetStrategy returns the rules of replica sets: one replica by
// default and an immutable selector.
func ReplicaSetStrategy() strategy.Funcs[*appsv1.ReplicaSet] {
	return strategy.Funcs[*appsv1.ReplicaSet]{
		DefaultFunc: func(rs *appsv1.ReplicaSet) {
			if rs.Spec.Replicas == nil {
				rs.Spec.Replicas = ptr.To[int32](1)
			}
			core.DefaultPodTemplateSpec(&rs.Spec.Template)
		},
		PrepareForCreateFunc: func(_ context.Context, rs *appsv1.ReplicaSet) {
			rs.Status = appsv1.ReplicaSetStatus{}
			rs.Generation = 1
		},
		PrepareForUpdateFunc: func(_ context.Context, rs, old *appsv1.ReplicaSet) {
			rs.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, rs, old *appsv1.ReplicaSet) {
			rs.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(rs, old)
		},
		ValidateFunc: func(_ context.Context, rs *appsv1.ReplicaSet) field.ErrorList {
			return validateReplicaSet(rs, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, rs, old *appsv1.ReplicaSet) field.ErrorList {
			errs := validateReplicaSet(rs, &old.ObjectMeta)
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
			return append(errs, validateReplicaSetStatus(&rs.Status)...)
		},
		SpecChangedFunc: func(rs, old *appsv1.ReplicaSet) bool {
			return !apiequality.Semantic.DeepEqual(rs.Spec, old.Spec)
		},
	}
}

// ReplicaSetFields returns the fields replica sets can be selected by.
func ReplicaSetFields(rs *appsv1.ReplicaSet) fields.Set {
	set := core.MetaFields(rs.Name, rs.Namespace, true)
	set["status.replicas"] = itoa(rs.Status.Replicas)
	return set
}

func validateReplicaSet(rs *appsv1.ReplicaSet, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&rs.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	s := &rs.Spec
	p := field.NewPath("spec")
	errs = append(errs, nonnegativePtr(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, core.ValidateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	// Kubernetes names the deployment here too: most replica sets are a deployment's.
	errs = append(errs, validateSelector(s.Selector, "deployment", p.Child("selector"))...)
	return append(errs, validateTemplate(s.Selector, &s.Template, "ReplicaSet", p.Child("selector"), p.Child("template"))...)
}

func validateReplicaSetStatus(s *appsv1.ReplicaSetStatus) field.ErrorList {
	p := field.NewPath("status")
	errs := nonnegative(p, map[string]int64{
		"observedGeneration":   s.ObservedGeneration,
		"replicas":             int64(s.Replicas),
		"fullyLabeledReplicas": int64(s.FullyLabeledReplicas),
		"readyReplicas":        int64(s.ReadyReplicas),
		"availableReplicas":    int64(s.AvailableReplicas),
	})
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, "cannot be greater than status.replicas"))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.replicas"))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
