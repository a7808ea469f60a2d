package apps

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// StatefulSetStrategy returns the rules of stateful sets: OrderedReady
// pods, RollingUpdate with partition 0, claims retained, one replica and
// ten revisions by default; and a spec of which only replicas, template,
// update strategy and a few knobs may change.
func StatefulSetStrategy() strategy.Funcs[*appsv1.StatefulSet] {
	return strategy.Funcs[*appsv1.StatefulSet]{
		DefaultFunc: defaultStatefulSet,
		PrepareForCreateFunc: func(_ context.Context, ss *appsv1.StatefulSet) {
			ss.Status = appsv1.StatefulSetStatus{}
			ss.Generation = 1
		},
		PrepareForUpdateFunc: func(_ context.Context, ss, old *appsv1.StatefulSet) {
			ss.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, ss, old *appsv1.StatefulSet) {
			ss.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(ss, old)
		},
		ValidateFunc: func(_ context.Context, ss *appsv1.StatefulSet) field.ErrorList {
			return validateStatefulSet(ss, nil)
		},
		ValidateUpdateFunc: validateStatefulSetUpdate,
		SpecChangedFunc: func(ss, old *appsv1.StatefulSet) bool {
			return !apiequality.Semantic.DeepEqual(ss.Spec, old.Spec)
		},
	}
}

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	s := &ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := s.UpdateStrategy.RollingUpdate; s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition == nil {
		ru.Partition = ptr.To[int32](0)
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Replicas == nil {
		s.Replicas = ptr.To[int32](1)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](10)
	}
	core.DefaultPodTemplateSpec(&s.Template)
	for i := range s.VolumeClaimTemplates {
		core.DefaultPersistentVolumeClaim(&s.VolumeClaimTemplates[i])
	}
}

var retentionPolicies = []appsv1.PersistentVolumeClaimRetentionPolicyType{
	appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
}

func validateStatefulSet(ss *appsv1.StatefulSet, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&ss.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSLabel)
	s := &ss.Spec
	p := field.NewPath("spec")
	switch s.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), s.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	usPath := p.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(usPath, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(usPath.Child("rollingUpdate"), s.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := s.UpdateStrategy.RollingUpdate; ru != nil {
			errs = append(errs, nonnegativePtr(ru.Partition, usPath.Child("rollingUpdate", "partition"))...)
			if ru.MaxUnavailable != nil {
				mu := usPath.Child("rollingUpdate", "maxUnavailable")
				errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, mu)...)
				if intOrPercentValue(ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(mu, ru.MaxUnavailable, "should not be 0"))
				}
				errs = append(errs, isNotMoreThan100Percent(ru.MaxUnavailable, mu)...)
			}
		}
	default:
		errs = append(errs, field.Invalid(usPath, s.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if rp := s.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpPath := p.Child("persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", rp.WhenDeleted}, {"whenScaled", rp.WhenScaled}} {
			if f.v != appsv1.DeletePersistentVolumeClaimRetentionPolicyType && f.v != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				errs = append(errs, field.NotSupported(rpPath.Child(f.name), f.v, retentionPolicies))
			}
		}
	}
	errs = append(errs, nonnegativePtr(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
	errs = append(errs, nonnegativePtr(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, core.ValidateNonnegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		errs = append(errs, core.ValidateNonnegative(int64(s.Ordinals.Start), p.Child("ordinals", "start"))...)
	}
	errs = append(errs, validateSelector(s.Selector, "statefulset", p.Child("selector"))...)
	// The pods mount the claims made from volumeClaimTemplates as volumes
	// of the same names, so validate the template with them present.
	t := s.Template.DeepCopy()
	for _, c := range s.VolumeClaimTemplates {
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	errs = append(errs, validateTemplate(s.Selector, t, "StatefulSet", p.Child("selector"), p.Child("template"))...)
	return errs
}

func validateStatefulSetUpdate(_ context.Context, ss, old *appsv1.StatefulSet) field.ErrorList {
	errs := validateStatefulSet(ss, &old.ObjectMeta)
	c := ss.Spec.DeepCopy()
	c.Replicas = old.Spec.Replicas
	c.Template = old.Spec.Template
	c.UpdateStrategy = old.Spec.UpdateStrategy
	c.MinReadySeconds = old.Spec.MinReadySeconds
	c.Ordinals = old.Spec.Ordinals
	c.RevisionHistoryLimit = old.Spec.RevisionHistoryLimit
	c.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	if !apiequality.Semantic.DeepEqual(*c, old.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	st := &ss.Status
	sp := field.NewPath("status")
	errs = append(errs, nonnegative(sp, map[string]int64{
		"observedGeneration": st.ObservedGeneration,
		"replicas":           int64(st.Replicas),
		"readyReplicas":      int64(st.ReadyReplicas),
		"currentReplicas":    int64(st.CurrentReplicas),
		"updatedReplicas":    int64(st.UpdatedReplicas),
		"availableReplicas":  int64(st.AvailableReplicas),
	})...)
	return errs
}
