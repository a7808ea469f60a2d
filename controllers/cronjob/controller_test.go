package cronjob

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
)

func userCronJob(name, schedule string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{Schedule: schedule, ConcurrencyPolicy: policy,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}}
}

// jobsOf returns the names of the live jobs cj owns, sorted.
func jobsOf(ctx context.Context, client kubernetes.Interface, cj *batchv1.CronJob) ([]string, error) {
	l, err := client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, j := range l.Items {
		if len(j.OwnerReferences) == 1 && j.OwnerReferences[0].UID == cj.UID && j.DeletionTimestamp == nil {
			names = append(names, j.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

func complete(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, at time.Time) {
	t.Helper()
	j, err := client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(at)
	j.Status.StartTime, j.Status.CompletionTime = &now, &now
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if _, err := client.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCronJobRunsOnScheduleHonouringForbidAndReplace(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	clustertest.RunManager(t, c, controllers.Manager{Clock: clk, Descriptors: []controllers.Descriptor{Descriptor()}})

	cj, cerr := client.BatchV1().CronJobs("default").Create(ctx, userCronJob("tick", "* * * * *", batchv1.ForbidConcurrent), metav1.CreateOptions{})
	if cerr != nil {
		t.Fatal(cerr)
	}
	minute := cj.CreationTimestamp.Time.Truncate(time.Minute).Add(time.Minute)
	run := func(m time.Time) string { return fmt.Sprintf("tick-%d", m.Unix()/60) }
	expectJobs := func(what string, want ...string) {
		t.Helper()
		clustertest.Eventually(t, 10*time.Second, what, func() (bool, error) {
			got, err := jobsOf(ctx, client, cj)
			if err != nil {
				return false, err
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Errorf("jobs %v, want %v", got, want)
		})
	}
	time.Sleep(300 * time.Millisecond)
	if got, _ := jobsOf(ctx, client, cj); len(got) != 0 {
		t.Fatalf("jobs %v before the first start time", got)
	}

	clk.SetTime(minute.Add(time.Second))
	expectJobs("the first run starts at its minute", run(minute))
	clustertest.Eventually(t, 10*time.Second, "the run is active and recorded", func() (bool, error) {
		got, err := client.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.Status.Active) == 1 && got.Status.Active[0].Name == run(minute) &&
			got.Status.LastScheduleTime != nil && got.Status.LastScheduleTime.Time.Equal(minute), nil
	})
	job, jerr := client.BatchV1().Jobs("default").Get(ctx, run(minute), metav1.GetOptions{})
	if jerr != nil {
		t.Fatal(jerr)
	}
	if job.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != minute.UTC().Format(time.RFC3339) {
		t.Errorf("scheduled-timestamp annotation %q", job.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
	}

	// Forbid: the next minute passes while the first run is active.
	second := minute.Add(time.Minute)
	clk.SetTime(second.Add(time.Second))
	time.Sleep(500 * time.Millisecond)
	expectJobs("Forbid starts nothing while a run is active", run(minute))

	// Once the first run completes, the run held back starts.
	complete(ctx, t, client, run(minute), second.Add(time.Second))
	expectJobs("the held-back run starts when the active one completes", run(minute), run(second))
	clustertest.Eventually(t, 10*time.Second, "lastSuccessfulTime follows the completed run", func() (bool, error) {
		got, err := client.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
		return err == nil && got.Status.LastSuccessfulTime != nil, err
	})

	// Replace: the next run replaces the active one.
	cur, err := client.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
	if _, err := client.BatchV1().CronJobs("default").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	third := second.Add(time.Minute)
	clk.SetTime(third.Add(time.Second))
	expectJobs("Replace deletes the active run and starts the new one", run(minute), run(third))
}
