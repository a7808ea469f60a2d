package job

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
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
)

// outcome is what one sync did, in a form easy to compare.
type outcome struct {
	created []string // indexes of created pods, "-" for none
	deleted int
	freed   int // finalizers removed
	status  string
	conds   string
	indexes string
	uncount string
}

func TestSync(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		job  jobB
		pods func(j jobB) []*corev1.Pod
		want outcome
	}{
		{"new job starts parallelism pods", testJob("j").completions(3).parallelism(2), nil,
			outcome{created: []string{"-", "-"}, status: "active=0 succeeded=0 failed=0"}},
		{"no more pods than remaining completions", testJob("j").completions(3).parallelism(3).counted(2, 0), nil,
			outcome{created: []string{"-"}, status: "active=0 succeeded=2 failed=0"}},
		{"a succeeded pod is counted once its finalizer is gone", testJob("j"),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(1, -1, corev1.PodSucceeded)} },
			outcome{freed: 1, status: "active=0 succeeded=1 failed=0", conds: "SuccessCriteriaMet Complete"}},
		{"a pod already uncounted is not counted twice", testJob("j").completions(2).uncounted([]types.UID{"j-1"}, nil),
			func(j jobB) []*corev1.Pod {
				return []*corev1.Pod{j.pod(1, -1, corev1.PodSucceeded), j.pod(2, -1, corev1.PodRunning)}
			},
			outcome{freed: 1, status: "active=1 succeeded=1 failed=0"}},
		{"failures past the backoff limit fail the job", testJob("j").backoffLimit(1).counted(0, 1),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(2, -1, corev1.PodFailed)} },
			outcome{freed: 1, status: "active=0 succeeded=0 failed=2", conds: "FailureTarget Failed/BackoffLimitExceeded"}},
		{"a failure within the limit is retried after a backoff", testJob("j").backoffLimit(3),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(1, -1, corev1.PodFailed)} },
			outcome{freed: 1, status: "active=0 succeeded=0 failed=1"}},
		{"past the active deadline", testJob("j").deadline(10, metav1.NewTime(t0.Add(-time.Minute))),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(1, -1, corev1.PodRunning)} },
			outcome{deleted: 1, status: "active=1 succeeded=0 failed=0", conds: "FailureTarget/DeadlineExceeded"}},
		{"suspended job deletes its pods", testJob("j").suspended(),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(1, -1, corev1.PodRunning)} },
			outcome{deleted: 1, status: "active=1 succeeded=0 failed=0", conds: "Suspended"}},
		{"indexed job starts the missing indexes", testJob("j").indexed().completions(3).parallelism(3),
			func(j jobB) []*corev1.Pod { return []*corev1.Pod{j.pod(1, 1, corev1.PodSucceeded)} },
			outcome{created: []string{"0", "2"}, freed: 1, status: "active=0 succeeded=1 failed=0", indexes: "1"}},
		{"indexed job replaces duplicate indexes", testJob("j").indexed().completions(2).parallelism(2),
			func(j jobB) []*corev1.Pod {
				return []*corev1.Pod{j.pod(1, 0, corev1.PodRunning), j.pod(2, 0, corev1.PodRunning)}
			},
			outcome{created: []string{"1"}, deleted: 1, status: "active=2 succeeded=0 failed=0"}},
		{"indexed job completes when every index succeeded", testJob("j").indexed().completions(2).parallelism(2),
			func(j jobB) []*corev1.Pod {
				return []*corev1.Pod{j.pod(1, 0, corev1.PodSucceeded), j.pod(2, 1, corev1.PodSucceeded), j.pod(3, 1, corev1.PodSucceeded)}
			},
			outcome{freed: 3, status: "active=0 succeeded=2 failed=0", indexes: "0-1", conds: "SuccessCriteriaMet Complete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.job.Job}
			if tc.pods != nil {
				for _, p := range tc.pods(tc.job) {
					objs = append(objs, p)
				}
			}
			clk := clocktesting.NewFakeClock(t0)
			cc, client := clustertest.FakeContext(t, controllers.DefaultOptions(), clk, objs...)
			var n atomic.Int32
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
				if p.Name == "" {
					p.Name = fmt.Sprintf("%sgen%d", p.GenerateName, n.Add(1))
				}
				return false, nil, nil
			})
			c, err := New(cc, Config{})
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			client.ClearActions()
			if err := c.sync(context.Background(), "default/j"); err != nil {
				t.Fatal(err)
			}
			var got outcome
			for _, a := range client.Actions() {
				switch {
				case a.GetVerb() == "create" && a.GetResource().Resource == "pods":
					p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
					ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
					if ix == "" {
						ix = "-"
					} else if p.Spec.Hostname != "j-"+ix {
						t.Errorf("pod of index %s has hostname %q", ix, p.Spec.Hostname)
					}
					got.created = append(got.created, ix)
					if len(p.Finalizers) != 1 || p.Finalizers[0] != batchv1.JobTrackingFinalizer || len(p.OwnerReferences) != 1 {
						t.Errorf("created pod without finalizer or owner: %v %v", p.Finalizers, p.OwnerReferences)
					}
				case a.GetVerb() == "delete" && a.GetResource().Resource == "pods":
					got.deleted++
				case a.GetVerb() == "patch" && a.GetResource().Resource == "pods":
					got.freed++
				}
			}
			sort.Strings(got.created)
			job, err := client.BatchV1().Jobs("default").Get(context.Background(), "j", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := job.Status
			got.status = fmt.Sprintf("active=%d succeeded=%d failed=%d", st.Active, st.Succeeded, st.Failed)
			var conds []string
			for _, c := range st.Conditions {
				if c.Status != corev1.ConditionTrue {
					continue
				}
				s := string(c.Type)
				if c.Type == batchv1.JobFailed || (c.Type == batchv1.JobFailureTarget && !strings.Contains(fmt.Sprint(st.Conditions), "Failed ")) {
					s += "/" + c.Reason
				}
				conds = append(conds, s)
			}
			got.conds = strings.Join(conds, " ")
			got.indexes = st.CompletedIndexes
			if u := st.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
				got.uncount = fmt.Sprint(u.Succeeded, u.Failed)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 320 * time.Second}, {7, 6 * time.Minute}, {30, 6 * time.Minute}} {
		r := backoffRecord{failures: tc.failures, lastFailure: t0}
		if got := r.delay(10*time.Second, 6*time.Minute); got != tc.want {
			t.Errorf("%d failures: delay %v, want %v", tc.failures, got, tc.want)
		}
	}
	failed := func(at time.Time) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}}}}
	}
	r := backoffRecord{}.next(nil, []*corev1.Pod{failed(t0), failed(t0.Add(time.Second))}, t0)
	if r.failures != 2 || !r.lastFailure.Equal(t0.Add(time.Second)) {
		t.Errorf("record %+v", r)
	}
	if again := r.next(nil, []*corev1.Pod{failed(t0.Add(time.Second))}, t0); again != r {
		t.Errorf("folding the same failure twice: %+v", again)
	}
	succeeded := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	if reset := r.next([]*corev1.Pod{succeeded}, nil, t0.Add(time.Minute)); reset.failures != 0 {
		t.Errorf("a success did not reset the record: %+v", reset)
	}
}

func TestIndexSet(t *testing.T) {
	for _, tc := range []struct {
		in, out     string
		completions int
	}{
		{"", "", 5},
		{"0,1,2,4", "0-2,4", 5},
		{"1-3,7", "1-3", 5},
		{"0-2,x,3", "0-3", 10},
	} {
		if got := parseIndexes(tc.in, tc.completions).String(); got != tc.out {
			t.Errorf("parseIndexes(%q) = %q, want %q", tc.in, got, tc.out)
		}
	}
}
