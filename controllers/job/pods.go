package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// envCompletionIndex is the variable that tells an indexed job's
// containers their index.
const envCompletionIndex = "JOB_COMPLETION_INDEX"

// manage creates and deletes pods to bring the job's active pods to what
// it wants now. It returns how long to wait before creating more when a
// backoff holds creation back.
func (c *Controller) manage(ctx context.Context, v *view) (time.Duration, error) {
	job := v.job
	if v.finishing != nil || ptr.Deref(job.Spec.Suspend, false) {
		return 0, c.apply(ctx, v, nil, 0, v.active)
	}
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	replaceOnlyFailed := ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed
	active := sortForDeletion(v.active)
	var del []*corev1.Pod
	var indexes []int
	count := 0
	if v.indexed {
		byIndex := map[int]*corev1.Pod{}
		// Keep the best pod of each valid index, from the end of the
		// deletion order; the rest go.
		for i := len(active) - 1; i >= 0; i-- {
			p := active[i]
			ix := podIndex(p)
			if ix == noIndex || ix >= v.completions || v.succeededIdx[ix] || byIndex[ix] != nil {
				del = append(del, p)
				continue
			}
			byIndex[ix] = p
		}
		want := min(parallelism, v.completions-len(v.succeededIdx))
		for ix := v.completions - 1; ix >= 0 && len(byIndex) > want; ix-- {
			if p := byIndex[ix]; p != nil {
				del = append(del, p)
				delete(byIndex, ix)
			}
		}
		n := want - len(byIndex)
		if replaceOnlyFailed {
			n -= v.terminating
		}
		for ix := 0; ix < v.completions && len(indexes) < n; ix++ {
			if !v.succeededIdx[ix] && byIndex[ix] == nil {
				indexes = append(indexes, ix)
			}
		}
		count = len(indexes)
	} else {
		want := parallelism
		switch {
		case v.completions < 0 && v.succeeded > 0:
			// A work queue job that saw a success lets its pods finish
			// and starts no more.
			want = len(active)
		case v.completions >= 0:
			want = max(0, min(parallelism, v.completions-v.succeeded))
		}
		if len(active) > want {
			del = active[:len(active)-want]
		}
		count = want - len(active)
		if replaceOnlyFailed {
			count -= v.terminating
		}
		count = max(count, 0)
	}
	if count > 0 {
		if wait := v.backoff.remaining(c.cfg.BackoffBase, c.cfg.BackoffMax, v.now.Time); wait > 0 {
			return wait, c.apply(ctx, v, nil, 0, del)
		}
	}
	return 0, c.apply(ctx, v, indexes, count, del)
}

// sortForDeletion orders pods from the first to delete to the last:
// unscheduled before scheduled, pending before running, not ready before
// ready, newer before older, as Kubernetes ranks active pods.
func sortForDeletion(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	rank := func(p *corev1.Pod) (int, int, int) {
		s, r, ready := 1, 1, 1
		if p.Spec.NodeName == "" {
			s = 0
		}
		if p.Status.Phase != corev1.PodRunning {
			r = 0
		}
		if !clusterutil.PodReady(p) {
			ready = 0
		}
		return s, r, ready
	}
	sort.SliceStable(out, func(i, j int) bool {
		si, ri, ai := rank(out[i])
		sj, rj, aj := rank(out[j])
		switch {
		case si != sj:
			return si < sj
		case ri != rj:
			return ri < rj
		case ai != aj:
			return ai < aj
		}
		return out[j].CreationTimestamp.Before(&out[i].CreationTimestamp)
	})
	return out
}

// apply creates count pods (at the given indexes, for an indexed job)
// and deletes del, recording expectations first so that the informer's
// echo of these writes is waited for.
func (c *Controller) apply(ctx context.Context, v *view, indexes []int, count int, del []*corev1.Pod) error {
	if count == 0 && len(del) == 0 {
		return nil
	}
	c.expectations.Expect(v.key, count, len(del))
	var errs []error
	for _, p := range del {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil {
			c.expectations.DeletionObserved(v.key)
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		c.recorder.Eventf(v.job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	}
	if count > 0 {
		if err := c.createPods(ctx, v, indexes, count); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("job: %s: %w", v.key, errors.Join(errs...))
	}
	return nil
}

// createPods creates pods in batches that double in size (1, 2, 4...),
// stopping at the first batch with a failure, so that a job whose pods
// are all refused (a quota, a bad template) fails one create, not
// parallelism of them.
func (c *Controller) createPods(ctx context.Context, v *view, indexes []int, count int) error {
	made := 0
	for batch := 1; made < count; batch *= 2 {
		n := min(batch, count-made)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			ix := noIndex
			if indexes != nil {
				ix = indexes[made+i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.createPod(ctx, v.job, ix)
			}()
		}
		wg.Wait()
		made += n
		var failed []error
		for _, err := range errs {
			if err != nil {
				c.expectations.CreationObserved(v.key)
				failed = append(failed, err)
			}
		}
		if len(failed) > 0 {
			// The creations never attempted will not be seen either.
			for i := made; i < count; i++ {
				c.expectations.CreationObserved(v.key)
			}
			return errors.Join(failed...)
		}
	}
	return nil
}

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, ix int) error {
	pod := newPod(job, ix)
	got, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", got.Name)
	return nil
}

// newPod builds a pod of job from its template: owned by the job, held
// by the tracking finalizer and, for an indexed job, given its index (as
// annotation, label and environment variable) and a hostname from it.
func newPod(job *batchv1.Job, ix int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-", Namespace: job.Namespace,
			Labels: t.Labels, Annotations: t.Annotations,
			Finalizers: append(t.Finalizers, batchv1.JobTrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: t.Spec,
	}
	if ix == noIndex {
		return pod
	}
	s := strconv.Itoa(ix)
	pod.GenerateName = job.Name + "-" + s + "-"
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = s
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = s
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-" + s
	}
	env := corev1.EnvVar{Name: envCompletionIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation),
	}}}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Env = append(cs[i].Env, env)
		}
	}
	return pod
}
