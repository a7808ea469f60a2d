package batch

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var ctx = context.Background()

type wantErr struct {
	field string
	typ   field.ErrorType
}

func checkErrs(t *testing.T, errs field.ErrorList, want ...wantErr) {
	t.Helper()
	got := map[wantErr]int{}
	for _, e := range errs {
		got[wantErr{e.Field, e.Type}]++
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Errorf("missing error %s %s; got %v", w.field, w.typ, errs)
			continue
		}
		got[w]--
	}
	for w, n := range got {
		if n > 0 {
			t.Errorf("unexpected error %s %s; all: %v", w.field, w.typ, errs)
		}
	}
}

func podTemplate(restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: restart,
		Containers:    []corev1.Container{{Name: "pi", Image: "perl:5.34"}},
	}}
}

func testJob(f func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "u-1", ResourceVersion: "1"},
		Spec:       batchv1.JobSpec{Template: podTemplate(corev1.RestartPolicyNever)},
	}
	if f != nil {
		f(j)
	}
	return j
}

func createJob(j *batchv1.Job) field.ErrorList {
	s := JobStrategy()
	s.Default(j)
	s.PrepareForCreate(ctx, j)
	return s.Validate(ctx, j)
}

func TestJobDefaultsAndGeneratedSelector(t *testing.T) {
	j := testJob(nil)
	if errs := createJob(j); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("job defaults = %+v", s)
	}
	if got := s.Selector.MatchLabels; len(got) != 1 || got["batch.kubernetes.io/controller-uid"] != "u-1" {
		t.Errorf("selector = %v", got)
	}
	l := s.Template.Labels
	if l["job-name"] != "pi" || l["batch.kubernetes.io/job-name"] != "pi" || l["controller-uid"] != "u-1" {
		t.Errorf("template labels = %v", l)
	}
	if j.Labels["batch.kubernetes.io/job-name"] != "pi" {
		t.Errorf("job labels = %v, want the pods' labels", j.Labels)
	}
	if s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Error("pod template not defaulted")
	}

	parallel := testJob(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) })
	createJob(parallel)
	if parallel.Spec.Completions != nil {
		t.Error("a work queue job (parallelism only) must keep completions unset")
	}

	t.Run("selector generated in Validate when uid comes late", func(t *testing.T) {
		j := testJob(func(j *batchv1.Job) { j.UID = "" })
		s := JobStrategy()
		s.Default(j)
		s.PrepareForCreate(ctx, j)
		j.UID = "u-2"
		if errs := s.Validate(ctx, j); len(errs) > 0 {
			t.Fatal(errs)
		}
		if j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != "u-2" {
			t.Errorf("selector = %v", j.Spec.Selector)
		}
	})
}

func TestJobValidation(t *testing.T) {
	tests := []struct {
		name string
		job  *batchv1.Job
		want []wantErr
	}{
		{"restart always", testJob(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }),
			[]wantErr{{"spec.template.spec.restartPolicy", field.ErrorTypeRequired}}},
		{"negative backoff", testJob(func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) }),
			[]wantErr{{"spec.backoffLimit", field.ErrorTypeInvalid}}},
		{"indexed without completions", testJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr.To[int32](2)
		}), []wantErr{{"spec.completions", field.ErrorTypeRequired}}},
		{"hand-made selector", testJob(func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			j.Spec.Template.Labels = map[string]string{"app": "pi"}
		}), []wantErr{{"spec.selector", field.ErrorTypeInvalid}}},
		{"manual selector", testJob(func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr.To(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
			j.Spec.Template.Labels = map[string]string{"app": "x"}
		}), []wantErr{{"spec.template.metadata.labels", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrs(t, createJob(tt.job), tt.want...) })
	}
	errs := createJob(testJob(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }))
	want := `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %s", errs, want)
	}
}

func TestJobTemplateIsImmutable(t *testing.T) {
	s := JobStrategy()
	old := testJob(nil)
	createJob(old)
	tests := []struct {
		name   string
		old    func(*batchv1.Job)
		change func(*batchv1.Job)
		want   []wantErr
	}{
		{"parallelism", nil, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }, nil},
		{"image", nil, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "perl:6" },
			[]wantErr{{"spec.template", field.ErrorTypeInvalid}}},
		{"completions", nil, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) },
			[]wantErr{{"spec.completions", field.ErrorTypeInvalid}}},
		{"selector", nil, func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["x"] = "y"; j.Spec.Template.Labels["x"] = "y" },
			[]wantErr{{"spec.selector", field.ErrorTypeInvalid}, {"spec.template", field.ErrorTypeInvalid}}},
		{"node selector of a suspended job", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) },
			func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"node selector of a running job", nil,
			func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} },
			[]wantErr{{"spec.template", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := old.DeepCopy()
			if tt.old != nil {
				tt.old(o)
			}
			n := o.DeepCopy()
			tt.change(n)
			checkErrs(t, s.ValidateUpdate(ctx, n, o), tt.want...)
		})
	}
	st := old.DeepCopy()
	st.Status.Succeeded = 1
	st.Spec.Parallelism = ptr.To[int32](9)
	s.PrepareStatusForUpdate(ctx, st, old)
	if *st.Spec.Parallelism != 1 || st.Status.Succeeded != 1 {
		t.Errorf("status update = %+v", st)
	}
	if JobFields(st)["status.successful"] != "1" {
		t.Error("status.successful field")
	}
}

func testCronJob(f func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", ResourceVersion: "1"},
		Spec: batchv1.CronJobSpec{
			Schedule:    "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate(corev1.RestartPolicyOnFailure)}},
		},
	}
	if f != nil {
		f(cj)
	}
	return cj
}

func createCronJob(cj *batchv1.CronJob) field.ErrorList {
	s := CronJobStrategy()
	s.Default(cj)
	s.PrepareForCreate(ctx, cj)
	return s.Validate(ctx, cj)
}

func TestCronJob(t *testing.T) {
	cj := testCronJob(nil)
	if errs := createCronJob(cj); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("cronjob defaults = %+v", s)
	}
	if s.JobTemplate.Spec.BackoffLimit != nil || s.JobTemplate.Spec.Template.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("job template defaults = %+v", s.JobTemplate.Spec)
	}
	tests := []struct {
		name string
		cj   *batchv1.CronJob
		want []wantErr
		msg  string
	}{
		{"descriptor", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }), nil, ""},
		{"names and steps", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "0 9-17/2 * JAN-MAR mon,fri" }), nil, ""},
		{"time zone", testCronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Paris") }), nil, ""},
		{"four fields", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "* * * *" }),
			[]wantErr{{"spec.schedule", field.ErrorTypeInvalid}}, "expected exactly 5 fields, found 4: [* * * *]"},
		{"minute 60", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "60 * * * *" }),
			[]wantErr{{"spec.schedule", field.ErrorTypeInvalid}}, "end of range (60) above maximum (59): 60"},
		{"TZ in schedule", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }),
			[]wantErr{{"spec.schedule", field.ErrorTypeInvalid}}, "cannot use TZ or CRON_TZ in schedule"},
		{"unknown zone", testCronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }),
			[]wantErr{{"spec.timeZone", field.ErrorTypeInvalid}}, ""},
		{"no schedule", testCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "" }),
			[]wantErr{{"spec.schedule", field.ErrorTypeRequired}}, ""},
		{"long name", testCronJob(func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) }),
			[]wantErr{{"metadata.name", field.ErrorTypeInvalid}}, "must be no more than 52 characters"},
		{"restart always", testCronJob(func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}),
			[]wantErr{{"spec.jobTemplate.spec.template.spec.restartPolicy", field.ErrorTypeRequired}}, ""},
		{"bad concurrency", testCronJob(func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }),
			[]wantErr{{"spec.concurrencyPolicy", field.ErrorTypeNotSupported}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := createCronJob(tt.cj)
			checkErrs(t, errs, tt.want...)
			if tt.msg != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.msg)) {
				t.Errorf("got %v, want message %q", errs, tt.msg)
			}
		})
	}
}
