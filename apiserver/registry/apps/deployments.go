package apps

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// DeploymentStrategy returns the rules of deployments: one replica,
// RollingUpdate 25%/25%, ten old replica sets kept and a 600 s progress
// deadline by default; an immutable selector; and a generation that
// moves with the spec and the annotations (which the controller copies to
// the replica sets).
func DeploymentStrategy() strategy.Funcs[*appsv1.Deployment] {
	return strategy.Funcs[*appsv1.Deployment]{
		DefaultFunc: defaultDeployment,
		PrepareForCreateFunc: func(_ context.Context, d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{}
			d.Generation = 1
		},
		PrepareForUpdateFunc: func(_ context.Context, d, old *appsv1.Deployment) {
			d.Status = old.Status
		},
		// As Kubernetes does, a status write may also change annotations
		// (the controller records the revision there), but not labels.
		PrepareStatusForUpdateFunc: func(_ context.Context, d, old *appsv1.Deployment) {
			d.Spec = old.Spec
			annotations := d.Annotations
			metav1.ResetObjectMetaForStatus(d, old)
			d.Annotations = annotations
		},
		ValidateFunc: func(_ context.Context, d *appsv1.Deployment) field.ErrorList {
			return validateDeployment(d, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, d, old *appsv1.Deployment) field.ErrorList {
			errs := validateDeployment(d, &old.ObjectMeta)
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
			return append(errs, validateDeploymentStatus(&d.Status)...)
		},
		SpecChangedFunc: func(d, old *appsv1.Deployment) bool {
			return !apiequality.Semantic.DeepEqual(d.Spec, old.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, old.Annotations)
		},
	}
}

func defaultDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	if s.Replicas == nil {
		s.Replicas = ptr.To[int32](1)
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == nil {
			s.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if s.Strategy.RollingUpdate.MaxSurge == nil {
			s.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	core.DefaultPodTemplateSpec(&s.Template)
}

func validateDeployment(d *appsv1.Deployment, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&d.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	s := &d.Spec
	p := field.NewPath("spec")
	errs = append(errs, nonnegativePtr(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, validateSelector(s.Selector, "deployment", p.Child("selector"))...)
	errs = append(errs, validateTemplate(s.Selector, &s.Template, "ReplicaSet", p.Child("selector"), p.Child("template"))...)
	errs = append(errs, validateDeploymentStrategy(&s.Strategy, p.Child("strategy"))...)
	errs = append(errs, core.ValidateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, nonnegativePtr(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
	if pds := s.ProgressDeadlineSeconds; pds != nil {
		errs = append(errs, core.ValidateNonnegative(int64(*pds), p.Child("progressDeadlineSeconds"))...)
		if *pds <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), *pds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		ru := s.RollingUpdate
		ruPath := fldPath.Child("rollingUpdate")
		errs := validatePositiveIntOrPercent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))
		errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, ruPath.Child("maxSurge"))...)
		if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
			errs = append(errs, field.Invalid(ruPath.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return append(errs, isNotMoreThan100Percent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))...)
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), s.Type, []appsv1.DeploymentStrategyType{
			appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
	}
}

func validateDeploymentStatus(s *appsv1.DeploymentStatus) field.ErrorList {
	p := field.NewPath("status")
	errs := nonnegative(p, map[string]int64{
		"observedGeneration":  s.ObservedGeneration,
		"replicas":            int64(s.Replicas),
		"updatedReplicas":     int64(s.UpdatedReplicas),
		"readyReplicas":       int64(s.ReadyReplicas),
		"availableReplicas":   int64(s.AvailableReplicas),
		"unavailableReplicas": int64(s.UnavailableReplicas),
	})
	if s.CollisionCount != nil {
		errs = append(errs, core.ValidateNonnegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.replicas"))
	}
	return errs
}
