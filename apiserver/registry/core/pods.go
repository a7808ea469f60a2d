package core

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// PodStrategy returns the rules of pods: Kubernetes' defaults, a new pod
// starting Pending with its QoS class, a spec that is immutable but for
// images, activeDeadlineSeconds and added tolerations, and a status
// written only through pods/status.
func PodStrategy() strategy.Funcs[*corev1.Pod] {
	return strategy.Funcs[*corev1.Pod]{
		DefaultFunc: func(pod *corev1.Pod) {
			DefaultPodSpec(&pod.Spec)
			defaultPodOnly(pod)
		},
		PrepareForCreateFunc: func(_ context.Context, pod *corev1.Pod) {
			pod.Generation = 1
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: PodQOSClass(&pod.Spec)}
		},
		PrepareForUpdateFunc: func(_ context.Context, pod, old *corev1.Pod) {
			pod.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, pod, old *corev1.Pod) {
			pod.Spec = old.Spec
			// Deletion is the business of DELETE, and old kubelets are
			// known to garble owner references in status writes.
			pod.DeletionTimestamp = old.DeletionTimestamp
			pod.DeletionGracePeriodSeconds = old.DeletionGracePeriodSeconds
			pod.OwnerReferences = old.OwnerReferences
			pod.Generation = old.Generation
			if pod.Status.QOSClass == "" {
				pod.Status.QOSClass = old.Status.QOSClass
			}
		},
		ValidateFunc:       validatePodCreate,
		ValidateUpdateFunc: validatePodUpdate,
		SpecChangedFunc: func(pod, old *corev1.Pod) bool {
			return !apiequality.Semantic.DeepEqual(pod.Spec, old.Spec)
		},
	}
}

// PodEphemeralContainersStrategy returns the rules of
// pods/ephemeralcontainers, through which `kubectl debug` adds a
// container to a running pod: only spec.ephemeralContainers is taken
// from the request, and ephemeral containers may be added but never
// changed or removed.
func PodEphemeralContainersStrategy() strategy.Funcs[*corev1.Pod] {
	return strategy.Funcs[*corev1.Pod]{
		PrepareForUpdateFunc: func(_ context.Context, pod, old *corev1.Pod) {
			added := pod.Spec.EphemeralContainers
			// The request's identity and preconditions stay, for the
			// generic layer to check; the rest is the stored pod's.
			typeMeta, meta := pod.TypeMeta, pod.ObjectMeta
			*pod = *old.DeepCopy()
			pod.TypeMeta = typeMeta
			pod.Name, pod.Namespace, pod.UID = meta.Name, meta.Namespace, meta.UID
			pod.ResourceVersion, pod.ManagedFields = meta.ResourceVersion, meta.ManagedFields
			pod.Spec.EphemeralContainers = added
		},
		ValidateUpdateFunc: validatePodEphemeralContainersUpdate,
	}
}

func validatePodCreate(_ context.Context, pod *corev1.Pod) field.ErrorList {
	errs := ValidateMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	specPath := field.NewPath("spec")
	errs = append(errs, ValidatePodSpec(&pod.Spec, specPath)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	return errs
}

// updatablePodSpecFields is the list Kubernetes prints when a pod update
// touches anything else.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

func validatePodUpdate(_ context.Context, pod, old *corev1.Pod) field.ErrorList {
	errs := ValidateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	specPath := field.NewPath("spec")
	errs = append(errs, ValidatePodSpec(&pod.Spec, specPath)...)
	errs = append(errs, validatePodStatus(&pod.Status)...)

	if len(pod.Spec.Containers) != len(old.Spec.Containers) {
		return append(errs, field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers"))
	}
	if len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath.Child("initContainers"), "pod updates may not add or remove containers"))
	}
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil {
		if *ads < 0 || *ads > math.MaxInt32 {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *ads, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if o := old.Spec.ActiveDeadlineSeconds; o != nil && *o < *ads {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *ads, "must be less than or equal to previous value"))
		}
	} else if old.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	if apiequality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.EphemeralContainers, old.Spec.EphemeralContainers) {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"),
			"may not be changed by updating the pod: add ephemeral containers through the pods/ephemeralcontainers subresource, as kubectl debug does"))
	}
	// Put back what may change; whatever still differs may not.
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.Tolerations = old.Spec.Tolerations
	munged.SchedulingGates = old.Spec.SchedulingGates
	munged.EphemeralContainers = old.Spec.EphemeralContainers // refused above
	if o, n := old.Spec.TerminationGracePeriodSeconds, munged.TerminationGracePeriodSeconds; o != nil && *o < 0 && n != nil && *n == 1 {
		munged.TerminationGracePeriodSeconds = o
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		msg := fmt.Sprintf("pod updates may not change fields other than %s\n  changed: %s",
			strings.Join(updatablePodSpecFields, ","), strings.Join(changedFields(old.Spec, *munged, "spec"), ", "))
		errs = append(errs, field.Forbidden(specPath, msg))
	}
	return errs
}

// mirrorPodAnnotation marks the API's copy of a node's static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// validatePodEphemeralContainersUpdate checks a write to
// pods/ephemeralcontainers: the pod as a whole, new ephemeral containers
// included, must be valid, and the ones it had must be kept unchanged,
// since the kubelet may already run them.
func validatePodEphemeralContainersUpdate(_ context.Context, pod, old *corev1.Pod) field.ErrorList {
	ecPath := field.NewPath("spec", "ephemeralContainers")
	if _, ok := old.Annotations[mirrorPodAnnotation]; ok {
		// The node runs a static pod from its own manifest, not from
		// this copy, so an ephemeral container added here would never run.
		return field.ErrorList{field.Forbidden(ecPath, "static pods do not support ephemeral containers")}
	}
	errs := ValidateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, ValidatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	byName := map[string]int{}
	for i, ec := range pod.Spec.EphemeralContainers {
		byName[ec.Name] = i
	}
	// A patch may reorder the list, so containers are matched by name.
	for _, o := range old.Spec.EphemeralContainers {
		i, ok := byName[o.Name]
		if !ok {
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral container %q may not be removed", o.Name)))
			continue
		}
		n := pod.Spec.EphemeralContainers[i]
		if apiequality.Semantic.DeepEqual(o, n) {
			continue
		}
		idx := ecPath.Index(i)
		changed := changedFields(o.EphemeralContainerCommon, n.EphemeralContainerCommon, idx.String())
		if o.TargetContainerName != n.TargetContainerName {
			changed = append(changed, idx.Child("targetContainerName").String())
		}
		errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral container %q may not be changed\n  changed: %s",
			o.Name, strings.Join(changed, ", "))))
	}
	return errs
}

// changedFields names the top-level fields of two structs of the same type
// that differ, by their JSON names under prefix.
func changedFields(a, b any, prefix string) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := 0; i < va.NumField(); i++ {
		if !apiequality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			out = append(out, prefix+"."+name)
		}
	}
	return out
}

// validateOnlyAddedTolerations allows new tolerations and new
// tolerationSeconds, but not editing or removing existing tolerations: the
// pod may already run on a node because of them.
func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			c := o
			c.TolerationSeconds = t.TolerationSeconds
			if apiequality.Semantic.DeepEqual(c, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validatePodStatus(s *corev1.PodStatus) field.ErrorList {
	var errs field.ErrorList
	statusPath := field.NewPath("status")
	if s.NominatedNodeName != "" {
		errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, s.NominatedNodeName, statusPath.Child("nominatedNodeName"))...)
	}
	for i, ip := range s.PodIPs {
		errs = append(errs, validateIP(ip.IP, statusPath.Child("podIPs").Index(i).Child("ip"))...)
	}
	if len(s.PodIPs) > 0 && s.PodIP != s.PodIPs[0].IP {
		errs = append(errs, field.Invalid(statusPath.Child("podIP"), s.PodIP, "must match podIPs[0]"))
	}
	for i, ip := range s.HostIPs {
		errs = append(errs, validateIP(ip.IP, statusPath.Child("hostIPs").Index(i).Child("ip"))...)
	}
	return errs
}
