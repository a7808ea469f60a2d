package batch

import (
	"context"
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// The labels Kubernetes puts on a job's pods; the unprefixed ones are kept
// for older clients.
const (
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"
)

// maxParallelismForIndexedJob bounds indexed jobs, whose controller tracks
// every index.
const maxParallelismForIndexedJob = 100000

// JobStrategy returns the rules of jobs: one completion and parallelism
// of one by default, backoffLimit 6, NonIndexed, not suspended; a selector
// generated from the job's uid unless manualSelector is set; a restart
// policy of OnFailure or Never; and a selector and pod template that do
// not change after creation (but for scheduling directives while the job
// is suspended and has not started).
//
// The selector needs metadata.uid: it is generated in PrepareForCreate
// when the uid is already set, else in Validate, as Kubernetes does.
func JobStrategy() strategy.Funcs[*batchv1.Job] {
	return strategy.Funcs[*batchv1.Job]{
		DefaultFunc: defaultJob,
		PrepareForCreateFunc: func(_ context.Context, job *batchv1.Job) {
			job.Status = batchv1.JobStatus{}
			job.Generation = 1
			if job.UID != "" {
				generateSelector(job)
			}
		},
		PrepareForUpdateFunc: func(_ context.Context, job, old *batchv1.Job) {
			job.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, job, old *batchv1.Job) {
			job.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(job, old)
		},
		ValidateFunc: func(_ context.Context, job *batchv1.Job) field.ErrorList {
			if job.Spec.Selector == nil {
				generateSelector(job)
			}
			return validateJob(job)
		},
		ValidateUpdateFunc: validateJobUpdate,
		SpecChangedFunc: func(job, old *batchv1.Job) bool {
			return !apiequality.Semantic.DeepEqual(job.Spec, old.Spec)
		},
	}
}

// JobFields returns the fields jobs can be selected by.
func JobFields(job *batchv1.Job) fields.Set {
	set := core.MetaFields(job.Name, job.Namespace, true)
	set["status.successful"] = strconv.Itoa(int(job.Status.Succeeded))
	return set
}

func defaultJob(job *batchv1.Job) {
	s := &job.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr.To[int32](1)
		s.Parallelism = ptr.To[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr.To[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr.To[int32](6)
		}
	}
	if len(job.Labels) == 0 && s.Template.Labels != nil {
		job.Labels = copyLabels(s.Template.Labels)
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	core.DefaultPodTemplateSpec(&s.Template)
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// generateSelector labels the pod template with the job's uid and name and
// selects on the uid, so a job's pods can never be claimed by another job
// of the same name. Labels the user set are kept; validation reports a
// conflict. An unlabeled job takes its pods' labels, as Kubernetes shows
// them.
func generateSelector(job *batchv1.Job) {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	t := &job.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = job.Name
		}
	}
	for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = string(job.UID)
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
	if len(job.Labels) == 0 {
		job.Labels = copyLabels(t.Labels)
	}
}

func validateJob(job *batchv1.Job) field.ErrorList {
	errs := core.ValidateMeta(&job.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateGeneratedSelector(job)...)
	errs = append(errs, validateJobSpec(&job.Spec, field.NewPath("spec"), true)...)
	if m := job.Spec.CompletionMode; m != nil && *m == batchv1.IndexedCompletion && job.Spec.Completions != nil && *job.Spec.Completions > 0 {
		// Pods of an indexed job are named <job>-<index>, and that must be a hostname.
		host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", host)))
		}
	}
	return errs
}

func validateGeneratedSelector(job *batchv1.Job) field.ErrorList {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tPath := field.NewPath("spec", "template", "metadata")
	for _, l := range []struct{ key, want string }{
		{legacyControllerUIDLabel, string(job.UID)},
		{legacyJobNameLabel, job.Name},
		{batchv1.ControllerUidLabel, string(job.UID)},
		{batchv1.JobNameLabel, job.Name},
	} {
		got, ok := job.Spec.Template.Labels[l.key]
		switch {
		case !ok:
			errs = append(errs, field.Required(tPath.Child("labels").Key(l.key), l.want))
		case got != l.want:
			errs = append(errs, field.Invalid(tPath.Child("labels").Key(l.key), job.Spec.Template.Labels, fmt.Sprintf("must be '%s'", l.want)))
		}
	}
	want := &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(job.UID)}}
	if !apiequality.Semantic.DeepEqual(job.Spec.Selector, want) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec checks a job spec; a job template's spec has no
// selector yet (needSelector false).
func validateJobSpec(s *batchv1.JobSpec, fldPath *field.Path, needSelector bool) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", s.Parallelism}, {"completions", s.Completions}, {"backoffLimit", s.BackoffLimit},
		{"ttlSecondsAfterFinished", s.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", s.BackoffLimitPerIndex}} {
		if f.v != nil {
			errs = append(errs, core.ValidateNonnegative(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, core.ValidateNonnegative(*s.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if s.BackoffLimitPerIndex != nil && !indexed {
		errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
	}
	if m := s.CompletionMode; m != nil {
		if *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
		if indexed {
			if s.Completions == nil {
				errs = append(errs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
			}
			if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
				errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *s.Parallelism,
					fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
			}
		}
	}
	if p := s.PodReplacementPolicy; p != nil {
		rp := fldPath.Child("podReplacementPolicy")
		switch {
		case s.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(rp, *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		case *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(rp, *p, []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}))
		}
	}
	if needSelector {
		selPath := fldPath.Child("selector")
		if s.Selector == nil {
			errs = append(errs, field.Required(selPath, ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		}
		if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
			errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	tPath := fldPath.Child("template")
	errs = append(errs, core.ValidatePodTemplateSpec(&s.Template, tPath)...)
	rpPath := tPath.Child("spec", "restartPolicy")
	switch rp := s.Template.Spec.RestartPolicy; {
	// Defaulting turns a missing restartPolicy into Always, so both mean
	// the user did not choose one.
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(rpPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rpPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rpPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

func validateJobUpdate(_ context.Context, job, old *batchv1.Job) field.ErrorList {
	errs := core.ValidateMetaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateJobSpec(&job.Spec, field.NewPath("spec"), true)...)
	p := field.NewPath("spec")
	s, o := &job.Spec, &old.Spec
	errs = append(errs, validateCompletionsUpdate(s, o, p.Child("completions"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Selector, o.Selector, p.Child("selector"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.CompletionMode, o.CompletionMode, p.Child("completionMode"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.PodFailurePolicy, o.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.BackoffLimitPerIndex, o.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.ManagedBy, o.ManagedBy, p.Child("managedBy"))...)
	// A suspended job that never started may still be told where to run
	// (that is how queueing systems place jobs); after that its pods
	// must all come from one template.
	oldTemplate := &o.Template
	if o.Suspend != nil && *o.Suspend && old.Status.StartTime == nil {
		oldTemplate = o.Template.DeepCopy()
		oldTemplate.Spec.NodeSelector = s.Template.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = s.Template.Spec.Tolerations
		oldTemplate.Spec.Affinity = s.Template.Spec.Affinity
		oldTemplate.Spec.SchedulingGates = s.Template.Spec.SchedulingGates
		oldTemplate.Annotations = s.Template.Annotations
		oldTemplate.Labels = s.Template.Labels
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(&s.Template, oldTemplate, p.Child("template"))...)
	st := &job.Status
	sp := field.NewPath("status")
	for _, f := range []struct {
		name string
		v    int32
	}{{"active", st.Active}, {"succeeded", st.Succeeded}, {"failed", st.Failed}} {
		errs = append(errs, core.ValidateNonnegative(int64(f.v), sp.Child(f.name))...)
	}
	if st.Ready != nil {
		errs = append(errs, core.ValidateNonnegative(int64(*st.Ready), sp.Child("ready"))...)
	}
	return errs
}

// validateCompletionsUpdate allows an indexed job to scale by changing
// completions and parallelism together; otherwise completions is fixed.
func validateCompletionsUpdate(s, o *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if !indexed {
		return apimachineryvalidation.ValidateImmutableField(s.Completions, o.Completions, fldPath)
	}
	if apiequality.Semantic.DeepEqual(s.Completions, o.Completions) || s.Completions == nil {
		return nil
	}
	if s.Parallelism == nil || *s.Completions != *s.Parallelism {
		return field.ErrorList{field.Invalid(fldPath, *s.Completions, "can only be modified in tandem with spec.parallelism")}
	}
	return nil
}
