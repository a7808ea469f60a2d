package apps

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
)

// validateSelector checks a controller's selector: required, well formed,
// and not empty (an empty selector would adopt every pod in the
// namespace). kind names the controller in the message, as Kubernetes
// does ("empty selector is invalid for deployment").
func validateSelector(sel *metav1.LabelSelector, kind string, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fldPath, sel, "empty selector is invalid for "+kind))
	}
	return errs
}

// validateTemplate checks that the pod template is valid, is selected by
// sel (else the controller would create pods forever), and suits a
// long-running controller: pods restart Always and have no deadline.
func validateTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, kind string, selPath, tPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		errs = append(errs, field.Invalid(selPath, sel, "invalid label selector"))
	} else if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, core.ValidatePodTemplateSpec(t, tPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", kind)))
	}
	return errs
}

// validatePositiveIntOrPercent checks a rolling update bound such as
// maxSurge: a non-negative count or a percentage.
func validatePositiveIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		errs = append(errs, core.ValidateNonnegative(int64(v.IntValue()), fldPath)...)
	default:
		errs = append(errs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')"))
	}
	return errs
}

// intOrPercentValue is the number in v, whether a count or a percentage.
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.String {
		n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		if err != nil {
			return 0
		}
		return n
	}
	return v.IntValue()
}

func isNotMoreThan100Percent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil || v.Type != intstr.String || !strings.HasSuffix(v.StrVal, "%") {
		return nil
	}
	if intOrPercentValue(v) > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

// nonnegative collects ValidateNonnegative over several named counters.
func nonnegative(fldPath *field.Path, values map[string]int64) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(values) {
		errs = append(errs, core.ValidateNonnegative(values[name], fldPath.Child(name))...)
	}
	return errs
}

func nonnegativePtr(v *int32, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return core.ValidateNonnegative(int64(*v), fldPath)
}

func replicas(v *int32) int64 {
	if v == nil {
		return 0
	}
	return int64(*v)
}

// sortedKeys returns m's keys in order, so errors come out the same way
// every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }
