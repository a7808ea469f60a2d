package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// ServiceAccountStrategy returns the rules of service accounts.
func ServiceAccountStrategy() strategy.Funcs[*corev1.ServiceAccount] {
	validate := func(sa *corev1.ServiceAccount, old *metav1.ObjectMeta) field.ErrorList {
		errs := ValidateObjectMeta(&sa.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
		for i, s := range sa.Secrets {
			if s.Name == "" {
				errs = append(errs, field.Required(field.NewPath("secrets").Index(i).Child("name"), ""))
			}
		}
		return errs
	}
	return strategy.Funcs[*corev1.ServiceAccount]{
		ValidateFunc: func(_ context.Context, sa *corev1.ServiceAccount) field.ErrorList { return validate(sa, nil) },
		ValidateUpdateFunc: func(_ context.Context, sa, old *corev1.ServiceAccount) field.ErrorList {
			return validate(sa, &old.ObjectMeta)
		},
	}
}

// EventStrategy returns the rules of core/v1 events: the event must live in
// the namespace of the object it is about (or in default, for events about
// cluster-scoped objects, as old clients write them).
func EventStrategy() strategy.Funcs[*corev1.Event] {
	return strategy.Funcs[*corev1.Event]{
		ValidateFunc: func(_ context.Context, e *corev1.Event) field.ErrorList { return validateEvent(e, nil) },
		ValidateUpdateFunc: func(_ context.Context, e, old *corev1.Event) field.ErrorList {
			return validateEvent(e, &old.ObjectMeta)
		},
	}
}

func validateEvent(e *corev1.Event, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&e.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.InvolvedObject.Namespace == "" {
		if e.Namespace != "" && e.Namespace != "default" {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else if e.Namespace != e.InvolvedObject.Namespace {
		errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.Count < 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), e.Count, "must be greater than or equal to 0"))
	}
	return errs
}
