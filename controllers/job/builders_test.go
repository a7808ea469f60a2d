package job

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// jobB builds test jobs: testJob("j").completions(3).parallelism(2).indexed().
type jobB struct{ *batchv1.Job }

func testJob(name string) jobB {
	uid := types.UID("uid-" + name)
	labels := map[string]string{batchv1.ControllerUidLabel: string(uid), batchv1.JobNameLabel: name}
	return jobB{&batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](6),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}}
}

func (b jobB) completions(n int32) jobB { b.Spec.Completions = ptr.To(n); return b }
func (b jobB) parallelism(n int32) jobB { b.Spec.Parallelism = ptr.To(n); return b }
func (b jobB) backoffLimit(n int32) jobB {
	b.Spec.BackoffLimit = ptr.To(n)
	return b
}
func (b jobB) indexed() jobB { b.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion); return b }
func (b jobB) suspended() jobB {
	b.Spec.Suspend = ptr.To(true)
	return b
}
func (b jobB) deadline(secs int64, started metav1.Time) jobB {
	b.Spec.ActiveDeadlineSeconds = ptr.To(secs)
	b.Status.StartTime = &started
	return b
}
func (b jobB) uncounted(succeeded, failed []types.UID) jobB {
	b.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: succeeded, Failed: failed}
	return b
}
func (b jobB) counted(succeeded, failed int32) jobB {
	b.Status.Succeeded, b.Status.Failed = succeeded, failed
	return b
}

// pod returns a pod of the job, tracked by the finalizer, at index ix
// (or none, with -1), in phase.
func (b jobB) pod(n int, ix int, phase corev1.PodPhase) *corev1.Pod {
	p := newPod(b.Job, ix)
	p.Name = fmt.Sprintf("%s-%d", b.Name, n)
	p.UID = types.UID(p.Name)
	if ix >= 0 {
		p.Name = b.Name + "-" + strconv.Itoa(ix) + "-" + strconv.Itoa(n)
		p.UID = types.UID(p.Name)
	}
	p.Status.Phase = phase
	return p
}
