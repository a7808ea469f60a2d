package job

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/controllers/ttlafterfinished"
	"cairn/internal/testcluster"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// userJob is a job as a user writes it: no selector, no labels.
func userJob(name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
}

// activePods lists the job's pods that have not finished.
func activePods(ctx context.Context, client kubernetes.Interface, job *batchv1.Job) ([]corev1.Pod, error) {
	l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.ControllerUidLabel + "=" + string(job.UID)})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// finish sets pod's phase, as its kubelet would once its containers exit.
func finish(ctx context.Context, t *testing.T, client kubernetes.Interface, pod corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	pod.Status.Phase = phase
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func jobCondition(ctx context.Context, client kubernetes.Interface, name string, t batchv1.JobConditionType) (*batchv1.Job, *batchv1.JobCondition, error) {
	job, err := client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return job, condition(&job.Status, t), nil
}

func TestJobRetriesFailedPodsThenFailsAtBackoffLimit(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{
		Descriptor(Config{BackoffBase: 100 * time.Millisecond}),
	}})
	client := c.Client(0)
	ctx := context.Background()
	j := userJob("flaky")
	j.Spec.BackoffLimit = ptr.To[int32](2)
	job, err := client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Selector == nil || job.Spec.Template.Labels[batchv1.ControllerUidLabel] != string(job.UID) {
		t.Fatalf("the API server generated no selector: %v %v", job.Spec.Selector, job.Spec.Template.Labels)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		var pod corev1.Pod
		clustertest.Eventually(t, 10*time.Second, fmt.Sprintf("pod attempt %d", attempt), func() (bool, error) {
			pods, err := activePods(ctx, client, job)
			if len(pods) == 1 {
				pod = pods[0]
			}
			return len(pods) == 1, err
		})
		if !controllerOwned(pod, job) {
			t.Fatalf("pod %s: owners %v finalizers %v", pod.Name, pod.OwnerReferences, pod.Finalizers)
		}
		finish(ctx, t, client, pod, corev1.PodFailed)
	}
	var failed *batchv1.Job
	clustertest.Eventually(t, 10*time.Second, "the job fails with BackoffLimitExceeded", func() (bool, error) {
		got, cond, err := jobCondition(ctx, client, "flaky", batchv1.JobFailed)
		failed = got
		return cond != nil && cond.Reason == batchv1.JobReasonBackoffLimitExceeded, err
	})
	if failed.Status.Failed != 3 || failed.Status.Active != 0 || condition(&failed.Status, batchv1.JobFailureTarget) == nil {
		t.Errorf("status %+v", failed.Status)
	}
	pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.ControllerUidLabel + "=" + string(job.UID)})
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want 3 (one per attempt)", len(pods.Items))
	}
	for _, p := range pods.Items {
		if len(p.Finalizers) != 0 {
			t.Errorf("pod %s still has finalizers %v", p.Name, p.Finalizers)
		}
	}
}

func controllerOwned(pod corev1.Pod, job *batchv1.Job) bool {
	return len(pod.OwnerReferences) == 1 && pod.OwnerReferences[0].UID == job.UID &&
		len(pod.Finalizers) == 1 && pod.Finalizers[0] == batchv1.JobTrackingFinalizer
}

func TestIndexedJobCompletesAndIsDeletedAfterItsTTL(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{
		Descriptor(Config{}), ttlafterfinished.Descriptor(),
	}})
	client := c.Client(0)
	ctx := context.Background()
	j := userJob("indexed")
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
	j.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	job, err := client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	clustertest.Eventually(t, 10*time.Second, "one pod per index", func() (bool, error) {
		pods, err = activePods(ctx, client, job)
		return len(pods) == 3, err
	})
	seen := map[string]bool{}
	for _, p := range pods {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "indexed-"+ix {
			t.Errorf("pod %s: index %q label %q hostname %q", p.Name, ix, p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname)
		}
		seen[ix] = true
	}
	if len(seen) != 3 {
		t.Fatalf("indexes %v", seen)
	}
	// The job lives one second after it completes: a watch sees the
	// completed job however slowly a poll would come round.
	w, err := client.BatchV1().Jobs("default").Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=indexed", ResourceVersion: job.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, p := range pods {
		finish(ctx, t, client, p, corev1.PodSucceeded)
	}
	var done *batchv1.Job
	timeout := time.After(10 * time.Second)
	for done == nil {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the job watch ended")
			}
			if j, isJob := ev.Object.(*batchv1.Job); isJob && condition(&j.Status, batchv1.JobComplete) != nil {
				done = j
			}
		case <-timeout:
			t.Fatal("the indexed job did not complete within 10s")
		}
	}
	st := done.Status
	if st.Succeeded != 3 || st.CompletedIndexes != "0-2" || st.CompletionTime == nil || st.StartTime == nil ||
		condition(&st, batchv1.JobSuccessCriteriaMet) == nil {
		t.Errorf("status %+v", st)
	}
	clustertest.Eventually(t, 10*time.Second, "the finished job is deleted after its TTL", func() (bool, error) {
		_, err := client.BatchV1().Jobs("default").Get(ctx, "indexed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
