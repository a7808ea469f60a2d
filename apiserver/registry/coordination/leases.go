// Package coordination holds the rules of coordination.k8s.io/v1 leases,
// which node heartbeats and leader election are built on.
package coordination

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// LeaseStrategy returns the rules of leases.
func LeaseStrategy() strategy.Funcs[*coordinationv1.Lease] {
	return strategy.Funcs[*coordinationv1.Lease]{
		ValidateFunc: func(_ context.Context, l *coordinationv1.Lease) field.ErrorList { return validateLease(l, nil) },
		ValidateUpdateFunc: func(_ context.Context, l, old *coordinationv1.Lease) field.ErrorList {
			return validateLease(l, &old.ObjectMeta)
		},
	}
}

func validateLease(l *coordinationv1.Lease, old *metav1.ObjectMeta) field.ErrorList {
	errs := core.ValidateObjectMeta(&l.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	p := field.NewPath("spec")
	s := &l.Spec
	if s.LeaseDurationSeconds != nil && *s.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *s.LeaseDurationSeconds, "must be greater than 0"))
	}
	if s.LeaseTransitions != nil && *s.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *s.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if st := s.Strategy; st != nil && *st != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(p.Child("strategy"), *st, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
	}
	if s.PreferredHolder != nil && *s.PreferredHolder != "" && (s.Strategy == nil || *s.Strategy == "") {
		errs = append(errs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
