package cronjob

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestSync(t *testing.T) {
	created := time.Date(2026, 3, 10, 10, 0, 30, 0, time.UTC)
	cronJob := func(mut func(*batchv1.CronJob)) *batchv1.CronJob {
		cj := userCronJob("cj", "*/5 * * * *", batchv1.AllowConcurrent)
		cj.UID, cj.CreationTimestamp = "cj-uid", metav1.NewTime(created)
		cj.Spec.Suspend = ptr.To(false)
		cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](3), ptr.To[int32](1)
		if mut != nil {
			mut(cj)
		}
		return cj
	}
	job := func(minute time.Time, cond batchv1.JobConditionType) *batchv1.Job {
		cj := cronJob(nil)
		j := newJob(cj, minute, time.UTC)
		j.UID = types.UID(j.Name)
		j.CreationTimestamp = metav1.NewTime(minute)
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
			j.Status.CompletionTime = &j.CreationTimestamp
		}
		return j
	}
	at := func(m int) time.Time { return time.Date(2026, 3, 10, 10, m, 0, 0, time.UTC) }
	active := func(j *batchv1.Job) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) {
			cj.Status.Active = append(cj.Status.Active, jobRef(j))
			cj.Status.LastScheduleTime = &metav1.Time{Time: j.CreationTimestamp.Time}
		}
	}
	for _, tc := range []struct {
		name    string
		cj      *batchv1.CronJob
		jobs    []*batchv1.Job
		now     time.Time
		created []string
		deleted []string
	}{
		{"nothing due", cronJob(nil), nil, at(4), nil, nil},
		{"due", cronJob(nil), nil, at(5).Add(time.Second), []string{jobName(cronJob(nil), at(5))}, nil},
		{"suspended", cronJob(func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }), nil, at(5).Add(time.Second), nil, nil},
		{"only the latest missed run starts", cronJob(nil), nil, at(17), []string{jobName(cronJob(nil), at(15))}, nil},
		{"past the starting deadline", cronJob(func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](30) }),
			nil, at(5).Add(time.Minute), nil, nil},
		{"within the starting deadline", cronJob(func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To[int64](120) }),
			nil, at(5).Add(time.Minute), []string{jobName(cronJob(nil), at(5))}, nil},
		{"Allow runs alongside an active run", cronJob(active(job(at(5), ""))), []*batchv1.Job{job(at(5), "")},
			at(10).Add(time.Second), []string{jobName(cronJob(nil), at(10))}, nil},
		{"Forbid waits for the active run", cronJob(func(cj *batchv1.CronJob) {
			active(job(at(5), ""))(cj)
			cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
		}), []*batchv1.Job{job(at(5), "")}, at(10).Add(time.Second), nil, nil},
		{"Replace deletes the active run", cronJob(func(cj *batchv1.CronJob) {
			active(job(at(5), ""))(cj)
			cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
		}), []*batchv1.Job{job(at(5), "")}, at(10).Add(time.Second), []string{jobName(cronJob(nil), at(10))}, []string{jobName(cronJob(nil), at(5))}},
		{"history limits delete the oldest finished runs", cronJob(func(cj *batchv1.CronJob) {
			cj.Status.LastScheduleTime = &metav1.Time{Time: at(30)}
		}), []*batchv1.Job{
			job(at(5), batchv1.JobComplete), job(at(10), batchv1.JobComplete), job(at(15), batchv1.JobComplete),
			job(at(20), batchv1.JobComplete), job(at(25), batchv1.JobFailed), job(at(30), batchv1.JobFailed),
		}, at(31), nil, []string{jobName(cronJob(nil), at(5)), jobName(cronJob(nil), at(25))}},
		{"an invalid schedule starts nothing", cronJob(func(cj *batchv1.CronJob) { cj.Spec.Schedule = "every day" }), nil, at(30), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.cj}
			for _, j := range tc.jobs {
				objs = append(objs, j)
			}
			cc, client := clustertest.FakeContext(t, controllers.DefaultOptions(), clocktesting.NewFakeClock(tc.now), objs...)
			c, err := New(cc)
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			client.ClearActions()
			if err := c.sync(context.Background(), "default/cj"); err != nil {
				t.Fatal(err)
			}
			var created, deleted []string
			for _, a := range client.Actions() {
				if a.GetResource().Resource != "jobs" {
					continue
				}
				switch a.GetVerb() {
				case "create":
					created = append(created, a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).Name)
				case "delete":
					deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
				}
			}
			sort.Strings(deleted)
			if fmt.Sprint(created) != fmt.Sprint(tc.created) || fmt.Sprint(deleted) != fmt.Sprint(tc.deleted) {
				t.Errorf("created %v deleted %v, want %v and %v", created, deleted, tc.created, tc.deleted)
			}
		})
	}
}
