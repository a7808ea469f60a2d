package printers

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

func jobColumns() []metav1.TableColumnDefinition {
	return columns(cols(
		nameColumn(),
		column("Status", typeString, "Whether the job runs, completed, failed, or is suspended or being deleted."),
		column("Completions", typeString, batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		column("Duration", typeString, "How long the job ran, or has been running."),
		ageColumn(),
	), templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"]))
}

func jobRow(job *batchv1.Job, o options) metav1.TableRow {
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return cells(
		job.Name,
		jobStatus(job),
		jobCompletions(job),
		jobDuration(job, o),
		o.age(job),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector),
	)
}

// jobStatus names the job's state. Final conditions win over deletion,
// which wins over transient conditions.
func jobStatus(job *batchv1.Job) string {
	switch {
	case jobCondition(job, batchv1.JobComplete):
		return "Complete"
	case jobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	default:
		return "Running"
	}
}

// jobCondition reports whether the job's first condition of type t is true.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobCompletions shows succeeded pods out of completions; a job without
// completions succeeds with one pod, and shows its parallelism if above 1.
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if p := job.Spec.Parallelism; p != nil && *p > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *p)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is empty before the job starts, the time so far while it
// runs, and its run time once complete.
func jobDuration(job *batchv1.Job, o options) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(o.now.Sub(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}

func cronJobColumns() []metav1.TableColumnDefinition {
	spec := batchv1.CronJobSpec{}.SwaggerDoc()
	status := batchv1.CronJobStatus{}.SwaggerDoc()
	return columns(cols(
		nameColumn(),
		column("Schedule", typeString, spec["schedule"]),
		column("Timezone", typeString, spec["timeZone"]),
		column("Suspend", typeBoolean, spec["suspend"]),
		column("Active", typeInteger, status["active"]),
		column("Last Schedule", typeString, status["lastScheduleTime"]),
		ageColumn(),
	), templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"]))
}

func cronJobRow(cj *batchv1.CronJob, o options) metav1.TableRow {
	lastSchedule := none
	if t := cj.Status.LastScheduleTime; t != nil {
		lastSchedule = o.since(*t)
	}
	timeZone := none
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	tmpl := cj.Spec.JobTemplate.Spec
	names, images := containerCells(tmpl.Template.Spec.Containers)
	return cells(
		cj.Name,
		cj.Spec.Schedule,
		timeZone,
		// A string cell in a boolean column, as kubectl expects: it shows
		// "False", not "false".
		boolPtrString(cj.Spec.Suspend),
		int64(len(cj.Status.Active)),
		lastSchedule,
		o.age(cj),
		names, images, metav1.FormatLabelSelector(tmpl.Selector),
	)
}
