package printers

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func jobWith(conditions ...batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: objMeta("backup"),
		Spec:       batchv1.JobSpec{Completions: ptr(int32(1)), Parallelism: ptr(int32(1)), Selector: selector(), Template: template()},
	}
	for _, c := range conditions {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return j
}

func TestJobStatus(t *testing.T) {
	deleted := jobWith()
	deleted.DeletionTimestamp = agoPtr(time.Second)
	completeAndDeleted := jobWith(batchv1.JobComplete)
	completeAndDeleted.DeletionTimestamp = agoPtr(time.Second)
	notTrue := jobWith()
	notTrue.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}}

	tests := []struct {
		name string
		job  *batchv1.Job
		want string
	}{
		{"running", jobWith(), "Running"},
		{"complete", jobWith(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), "Complete"},
		{"failed", jobWith(batchv1.JobFailureTarget, batchv1.JobFailed), "Failed"},
		{"suspended", jobWith(batchv1.JobSuspended), "Suspended"},
		{"about to fail", jobWith(batchv1.JobFailureTarget), "FailureTarget"},
		{"being deleted", deleted, "Terminating"},
		{"final status wins over deletion", completeAndDeleted, "Complete"},
		{"false condition ignored", notTrue, "Running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wideRow(t, tt.job)[1]; got != tt.want {
				t.Errorf("STATUS = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJobCompletionsAndDuration(t *testing.T) {
	tests := []struct {
		name                    string
		completions, parallel   *int32
		succeeded               int32
		start, end              *time.Duration // ago
		wantCompletions, wantDu string
	}{
		{"fixed completions, not started", ptr(int32(5)), ptr(int32(2)), 0, nil, nil, "0/5", ""},
		{"running for 3m", ptr(int32(5)), ptr(int32(2)), 2, ptr(3 * time.Minute), nil, "2/5", "3m"},
		{"took 45s", ptr(int32(1)), nil, 1, ptr(10 * time.Minute), ptr(10*time.Minute - 45*time.Second), "1/1", "45s"},
		{"work queue with parallelism", nil, ptr(int32(4)), 1, nil, nil, "1/1 of 4", ""},
		{"work queue of one", nil, ptr(int32(1)), 0, nil, nil, "0/1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := jobWith()
			j.Spec.Completions, j.Spec.Parallelism = tt.completions, tt.parallel
			j.Status.Succeeded = tt.succeeded
			if tt.start != nil {
				j.Status.StartTime = agoPtr(*tt.start)
			}
			if tt.end != nil {
				j.Status.CompletionTime = agoPtr(*tt.end)
			}
			c := wideRow(t, j)
			checkCells(t, c[2:4], []any{tt.wantCompletions, tt.wantDu})
		})
	}
}

func TestJobColumns(t *testing.T) {
	j := jobWith()
	checkColumns(t, j,
		[]string{"Name", "Status", "Completions", "Duration", "Age"},
		[]string{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"})
	checkCells(t, wideRow(t, j), []any{"backup", "Running", "0/1", "", "60m", "web,log", "nginx:1.27,fluent:2", "app=web"})
}

func TestCronJob(t *testing.T) {
	cj := &batchv1.CronJob{
		ObjectMeta: objMeta("nightly"),
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Selector: selector(), Template: template()}}},
	}
	checkColumns(t, cj,
		[]string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"},
		[]string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"})

	tests := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []any // SCHEDULE through AGE
	}{
		{"never ran", func(*batchv1.CronJob) {},
			[]any{"0 3 * * *", "<none>", "<unset>", int64(0), "<none>", "60m"}},
		{"ran, one active, time zone set", func(cj *batchv1.CronJob) {
			cj.Spec.TimeZone = ptr("Europe/Paris")
			cj.Spec.Suspend = ptr(false)
			cj.Status.Active = []corev1.ObjectReference{{Name: "nightly-1"}}
			cj.Status.LastScheduleTime = agoPtr(5 * time.Minute)
		}, []any{"0 3 * * *", "Europe/Paris", "False", int64(1), "5m", "60m"}},
		{"suspended", func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr(true) },
			[]any{"0 3 * * *", "<none>", "True", int64(0), "<none>", "60m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := cj.DeepCopy()
			tt.mutate(cj)
			c := wideRow(t, cj)
			checkCells(t, c[1:7], tt.want)
			checkCells(t, c[7:], []any{"web,log", "nginx:1.27,fluent:2", "app=web"})
		})
	}
}
