package job

import (
	"context"
	"fmt"
	"time"

	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// view is a job and its pods as one sync sees them.
type view struct {
	key         string
	job         *batchv1.Job
	now         metav1.Time
	indexed     bool
	completions int // -1 when unset (a work queue job)
	pods        []*corev1.Pod
	active      []*corev1.Pod
	terminating int
	ready       int
	// uncounted are the UIDs already in status.uncountedTerminatedPods.
	uncounted map[types.UID]bool
	// newSucceeded and newFailed finished since the last sync and are
	// not counted anywhere yet.
	newSucceeded, newFailed []*corev1.Pod
	// finalize are the pods whose tracking finalizer can go.
	finalize []*corev1.Pod
	// succeededIdx are the completed indexes, new ones included.
	succeededIdx indexSet
	// succeeded and failed are the totals, uncounted and new included.
	succeeded, failed int
	// finishing is the FailureTarget or SuccessCriteriaMet condition.
	finishing *batchv1.JobCondition
	// backoff is the job's backoff record with the new pods folded in;
	// it is stored once they are recorded in status.
	backoff backoffRecord
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.removing.forget(key)
		c.backoff.delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	if m := job.Spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		return nil // another controller runs this job
	}
	if finished(job) {
		return nil
	}
	// Expectations are read before the pods, so that a pod created
	// between the two reads is either listed or still expected.
	satisfied := c.expectations.Satisfied(key) && c.removing.len(key) == 0
	v, err := c.observe(key, job)
	if err != nil {
		return err
	}
	st := job.Status.DeepCopy()
	c.decide(v, st)
	var requeue time.Duration
	if satisfied && job.DeletionTimestamp == nil {
		requeue, err = c.manage(ctx, v)
		if err != nil {
			return err
		}
	}
	if err := c.track(ctx, v, st); err != nil {
		return err
	}
	if d := c.deadlineIn(v); d > 0 && (requeue == 0 || d < requeue) {
		requeue = d
	}
	if requeue > 0 {
		c.queue.AddAfter(key, requeue)
	}
	return nil
}

// observe classifies job's pods.
func (c *Controller) observe(key string, job *batchv1.Job) (*view, error) {
	sel, err := selectorOf(job)
	if err != nil {
		return nil, fmt.Errorf("job: %s has an invalid selector: %w", key, err)
	}
	all, err := c.pods.Pods(job.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	v := &view{
		key: key, job: job, now: metav1.NewTime(c.clock.Now()),
		indexed:     ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion,
		completions: -1, uncounted: map[types.UID]bool{},
	}
	if job.Spec.Completions != nil {
		v.completions = int(*job.Spec.Completions)
	}
	v.succeededIdx = indexSet{}
	if v.indexed {
		v.succeededIdx = parseIndexes(job.Status.CompletedIndexes, v.completions)
	}
	if u := job.Status.UncountedTerminatedPods; u != nil {
		for _, uid := range append(append([]types.UID(nil), u.Succeeded...), u.Failed...) {
			v.uncounted[uid] = true
		}
	}
	v.finishing = condition(&job.Status, batchv1.JobFailureTarget)
	if v.finishing == nil {
		v.finishing = condition(&job.Status, batchv1.JobSuccessCriteriaMet)
	}
	succeededAfterSuccess := v.finishing != nil && v.finishing.Type == batchv1.JobSuccessCriteriaMet
	for _, p := range all {
		if !clusterutil.ControlledBy(p, job.UID) {
			continue
		}
		v.pods = append(v.pods, p)
		terminal := clusterutil.PodTerminal(p)
		switch {
		case !terminal && p.DeletionTimestamp == nil:
			v.active = append(v.active, p)
			if clusterutil.PodReady(p) {
				v.ready++
			}
			continue
		case !terminal:
			v.terminating++
		}
		if !clusterutil.HasFinalizer(p, batchv1.JobTrackingFinalizer) || c.removing.has(key, p.UID) {
			continue
		}
		v.finalize = append(v.finalize, p)
		if v.uncounted[p.UID] {
			continue
		}
		ix := podIndex(p)
		validIx := !v.indexed || (ix != noIndex && ix < v.completions)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if v.indexed && (!validIx || v.succeededIdx[ix]) {
				continue // a duplicate or stray index: freed, not counted
			}
			if v.indexed {
				v.succeededIdx[ix] = true
			}
			v.newSucceeded = append(v.newSucceeded, p)
		case p.Status.Phase != corev1.PodFailed && succeededAfterSuccess:
			// Pods stopped because the job already succeeded did not fail.
		case validIx:
			// Failed, or deleted before finishing: a pod removed from
			// under the job (evicted, its node lost) counts as a failure.
			v.newFailed = append(v.newFailed, p)
		}
	}
	v.succeeded = int(job.Status.Succeeded) + len(v.newSucceeded)
	v.failed = int(job.Status.Failed) + len(v.newFailed)
	if u := job.Status.UncountedTerminatedPods; u != nil {
		v.succeeded += len(u.Succeeded)
		v.failed += len(u.Failed)
	}
	v.backoff = c.backoff.get(key).next(v.newSucceeded, v.newFailed, v.now.Time)
	return v, nil
}

// decide sets the start time and the suspension and finishing conditions.
func (c *Controller) decide(v *view, st *batchv1.JobStatus) {
	job := v.job
	suspended := ptr.Deref(job.Spec.Suspend, false)
	if v.finishing == nil {
		if suspended {
			if setCondition(st, batchv1.JobSuspended, corev1.ConditionTrue, reasonSuspended, "Job suspended", v.now) {
				c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
			}
		} else if condition(st, batchv1.JobSuspended) != nil {
			setCondition(st, batchv1.JobSuspended, corev1.ConditionFalse, reasonResumed, "Job resumed", v.now)
			// The active deadline counts from the resumption.
			st.StartTime = &v.now
			c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
		}
	}
	if st.StartTime == nil && !suspended {
		st.StartTime = &v.now
	}
	if v.finishing != nil {
		return
	}
	limit := int(ptr.Deref(job.Spec.BackoffLimit, 6))
	var t batchv1.JobConditionType
	switch {
	case v.failed > limit:
		t = batchv1.JobFailureTarget
		setCondition(st, t, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, v.now)
		c.recorder.Event(job, corev1.EventTypeWarning, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded)
	case pastDeadline(job, st, v.now.Time):
		t = batchv1.JobFailureTarget
		setCondition(st, t, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded, v.now)
		c.recorder.Event(job, corev1.EventTypeWarning, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded)
	case v.successReached():
		t = batchv1.JobSuccessCriteriaMet
		setCondition(st, t, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompletionsReached, v.now)
	default:
		return
	}
	v.finishing = condition(st, t)
}

// successReached reports whether the job has all the successes it needs:
// every index (Indexed), completions pods (NonIndexed), or, for a work
// queue without completions, one success and nothing left running.
func (v *view) successReached() bool {
	switch {
	case v.indexed:
		return len(v.succeededIdx) >= v.completions
	case v.completions < 0:
		return v.succeeded > 0 && len(v.active) == 0
	default:
		return v.succeeded >= v.completions
	}
}

func pastDeadline(job *batchv1.Job, st *batchv1.JobStatus, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil || ptr.Deref(job.Spec.Suspend, false) {
		return false
	}
	return now.Sub(st.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// deadlineIn is how long until the active deadline of an unfinished job
// passes, or zero.
func (c *Controller) deadlineIn(v *view) time.Duration {
	job := v.job
	if v.finishing != nil || job.Spec.ActiveDeadlineSeconds == nil || ptr.Deref(job.Spec.Suspend, false) {
		return 0
	}
	start := v.now.Time
	if job.Status.StartTime != nil {
		start = job.Status.StartTime.Time
	}
	return max0(start.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second).Sub(v.now.Time))
}
