package apps

import (
	"context"
	"strconv"

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

// DaemonSetStrategy returns the rules of daemon sets: RollingUpdate with
// maxUnavailable 1 and maxSurge 0, ten revisions by default, an
// immutable selector, and the template generation Kubernetes keeps in
// the deprecated.daemonset.template.generation annotation: 1 on create,
// one more on each template change, never set by clients.
func DaemonSetStrategy() strategy.Funcs[*appsv1.DaemonSet] {
	return strategy.Funcs[*appsv1.DaemonSet]{
		DefaultFunc: defaultDaemonSet,
		PrepareForCreateFunc: func(_ context.Context, ds *appsv1.DaemonSet) {
			ds.Status = appsv1.DaemonSetStatus{}
			ds.Generation = 1
			setTemplateGeneration(ds, max(templateGeneration(ds), 1))
		},
		PrepareForUpdateFunc: func(_ context.Context, ds, old *appsv1.DaemonSet) {
			ds.Status = old.Status
			gen := templateGeneration(old)
			if !apiequality.Semantic.DeepEqual(ds.Spec.Template, old.Spec.Template) {
				gen++
			}
			setTemplateGeneration(ds, gen)
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, ds, old *appsv1.DaemonSet) {
			ds.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(ds, old)
		},
		ValidateFunc: func(_ context.Context, ds *appsv1.DaemonSet) field.ErrorList {
			return validateDaemonSet(ds, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, ds, old *appsv1.DaemonSet) field.ErrorList {
			errs := validateDaemonSet(ds, &old.ObjectMeta)
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
			st := &ds.Status
			return append(errs, nonnegative(field.NewPath("status"), map[string]int64{
				"observedGeneration":     st.ObservedGeneration,
				"currentNumberScheduled": int64(st.CurrentNumberScheduled),
				"numberMisscheduled":     int64(st.NumberMisscheduled),
				"desiredNumberScheduled": int64(st.DesiredNumberScheduled),
				"numberReady":            int64(st.NumberReady),
				"updatedNumberScheduled": int64(st.UpdatedNumberScheduled),
				"numberAvailable":        int64(st.NumberAvailable),
				"numberUnavailable":      int64(st.NumberUnavailable),
			})...)
		},
		SpecChangedFunc: func(ds, old *appsv1.DaemonSet) bool {
			return !apiequality.Semantic.DeepEqual(ds.Spec, old.Spec)
		},
	}
}

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	core.DefaultPodTemplateSpec(&ds.Spec.Template)
}

func validateDaemonSet(ds *appsv1.DaemonSet, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&ds.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	s := &ds.Spec
	p := field.NewPath("spec")
	errs = append(errs, validateSelector(s.Selector, "daemonset", p.Child("selector"))...)
	errs = append(errs, validateTemplate(s.Selector, &s.Template, "DaemonSet", p.Child("selector"), p.Child("template"))...)
	errs = append(errs, core.ValidateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, nonnegativePtr(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
	return append(errs, validateDaemonSetUpdateStrategy(&s.UpdateStrategy, p.Child("updateStrategy"))...)
}

func validateDaemonSetUpdateStrategy(us *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch us.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if us.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		ru := us.RollingUpdate
		ruPath := fldPath.Child("rollingUpdate")
		errs := validatePositiveIntOrPercent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))
		errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, ruPath.Child("maxSurge"))...)
		errs = append(errs, isNotMoreThan100Percent(ru.MaxUnavailable, ruPath.Child("maxUnavailable"))...)
		errs = append(errs, isNotMoreThan100Percent(ru.MaxSurge, ruPath.Child("maxSurge"))...)
		// A node gets a new pod before or after losing its old one, not both.
		hasUnavailable, hasSurge := intOrPercentValue(ru.MaxUnavailable) != 0, intOrPercentValue(ru.MaxSurge) != 0
		switch {
		case hasUnavailable && hasSurge:
			errs = append(errs, field.Invalid(ruPath.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
		case !hasUnavailable && !hasSurge:
			errs = append(errs, field.Required(ruPath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(fldPath, us.Type, []appsv1.DaemonSetUpdateStrategyType{
			appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType})}
	}
}

// templateGeneration reads ds's template generation annotation; 0 when it
// is missing or unreadable.
func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, err := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, gen int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
}
