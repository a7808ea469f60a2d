package batch

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	// The time zone database is embedded so that spec.timeZone is checked
	// the same way on every machine, with or without /usr/share/zoneinfo.
	_ "time/tzdata"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/internal/strategy"
)

// maxCronJobNameLength leaves room for the 11-character "-<minutes>"
// suffix of the jobs it creates within a 63-character label value.
const maxCronJobNameLength = 63 - 11

// CronJobStrategy returns the rules of cron jobs: Allow concurrency, not
// suspended and history limits of 3 succeeded and 1 failed job by
// default; a schedule the controller can parse; and a job template whose
// selector is always generated.
func CronJobStrategy() strategy.Funcs[*batchv1.CronJob] {
	return strategy.Funcs[*batchv1.CronJob]{
		DefaultFunc: defaultCronJob,
		PrepareForCreateFunc: func(_ context.Context, cj *batchv1.CronJob) {
			cj.Status = batchv1.CronJobStatus{}
			cj.Generation = 1
		},
		PrepareForUpdateFunc: func(_ context.Context, cj, old *batchv1.CronJob) {
			cj.Status = old.Status
		},
		PrepareStatusForUpdateFunc: func(_ context.Context, cj, old *batchv1.CronJob) {
			cj.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(cj, old)
		},
		ValidateFunc: func(_ context.Context, cj *batchv1.CronJob) field.ErrorList {
			errs := core.ValidateMeta(&cj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
			errs = append(errs, validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))...)
			if len(cj.Name) > maxCronJobNameLength {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
			}
			return errs
		},
		ValidateUpdateFunc: func(_ context.Context, cj, old *batchv1.CronJob) field.ErrorList {
			errs := core.ValidateMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
			return append(errs, validateCronJobSpec(&cj.Spec, &old.Spec, field.NewPath("spec"))...)
		},
		SpecChangedFunc: func(cj, old *batchv1.CronJob) bool {
			return !apiequality.Semantic.DeepEqual(cj.Spec, old.Spec)
		},
	}
}

// defaultCronJob applies the cron job's own defaults and the pod template
// defaults inside its job template; the job-level defaults (completions,
// backoffLimit, ...) are applied to each job when it is created.
func defaultCronJob(cj *batchv1.CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	core.DefaultPodTemplateSpec(&s.JobTemplate.Spec.Template)
}

func validateCronJobSpec(s, old *batchv1.CronJobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	schedPath := fldPath.Child("schedule")
	if s.Schedule == "" {
		errs = append(errs, field.Required(schedPath, ""))
	} else {
		if err := parseCronSchedule(s.Schedule); err != nil {
			errs = append(errs, field.Invalid(schedPath, s.Schedule, err.Error()))
		}
		// Schedules that already carry a TZ keep working; new ones use timeZone.
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		switch {
		case allowTZ && strings.Contains(s.Schedule, "TZ") && s.TimeZone != nil:
			errs = append(errs, field.Invalid(schedPath, s.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
		case !allowTZ && strings.Contains(s.Schedule, "TZ"):
			errs = append(errs, field.Invalid(schedPath, s.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, core.ValidateNonnegative(*s.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.TimeZone, s.TimeZone) {
		errs = append(errs, validateTimeZone(s.TimeZone, fldPath.Child("timeZone"))...)
	}
	cpPath := fldPath.Child("concurrencyPolicy")
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cpPath, ""))
	default:
		errs = append(errs, field.NotSupported(cpPath, s.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{
			batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jtPath := fldPath.Child("jobTemplate")
	errs = append(errs, metav1validation.ValidateLabels(s.JobTemplate.Labels, jtPath.Child("metadata", "labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(s.JobTemplate.Annotations, jtPath.Child("metadata", "annotations"))...)
	errs = append(errs, validateJobSpec(&s.JobTemplate.Spec, jtPath.Child("spec"), false)...)
	if s.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jtPath.Child("spec", "selector"), s.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := s.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(jtPath.Child("spec", "manualSelector"), *m, []string{"nil", "false"}))
	}
	if s.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, core.ValidateNonnegative(int64(*s.SuccessfulJobsHistoryLimit), fldPath.Child("successfulJobsHistoryLimit"))...)
	}
	if s.FailedJobsHistoryLimit != nil {
		errs = append(errs, core.ValidateNonnegative(int64(*s.FailedJobsHistoryLimit), fldPath.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

var timeZoneChars = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, fldPath *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fldPath, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneChars.MatchString(part) {
			return field.ErrorList{field.Invalid(fldPath, *tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	if strings.EqualFold(*tz, "Local") {
		return field.ErrorList{field.Invalid(fldPath, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return field.ErrorList{field.Invalid(fldPath, *tz, err.Error())}
	}
	return nil
}
