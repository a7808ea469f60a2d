package ttlafterfinished

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestSyncDeletesExpiredJobsOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(ttl *int32, cond batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "uid"},
			Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
		}
		return j
	}
	for _, tc := range []struct {
		name    string
		job     *batchv1.Job
		now     time.Duration // after the job finished
		deleted bool
	}{
		{"completed, expired", job(ptr.To[int32](10), batchv1.JobComplete), 11 * time.Second, true},
		{"failed, expired", job(ptr.To[int32](0), batchv1.JobFailed), 0, true},
		{"completed, not yet", job(ptr.To[int32](10), batchv1.JobComplete), 5 * time.Second, false},
		{"no TTL", job(nil, batchv1.JobComplete), time.Hour, false},
		{"still running", job(ptr.To[int32](0), ""), time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, client := clustertest.FakeContext(t, controllers.DefaultOptions(), clocktesting.NewFakeClock(t0.Add(tc.now)), tc.job)
			c, err := New(cc)
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			if err := c.sync(context.Background(), "default/j"); err != nil {
				t.Fatal(err)
			}
			deleted := false
			for _, a := range client.Actions() {
				if a.GetVerb() == "delete" {
					deleted = true
				}
			}
			if deleted != tc.deleted {
				t.Errorf("deleted = %v, want %v", deleted, tc.deleted)
			}
		})
	}
}
