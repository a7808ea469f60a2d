package cronjob

import (
	"context"
	"fmt"
	"sort"
	"time"

	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// nextSlack is added to the wait for the next start time, so the sync
// lands just after it rather than just before.
const nextSlack = 100 * time.Millisecond

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cj, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := c.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if clusterutil.ControlledBy(j, cj.UID) {
			jobs = append(jobs, j)
		}
	}
	st := cj.Status.DeepCopy()
	if err := c.reconcileActive(ctx, cj, st, jobs); err != nil {
		return err
	}
	c.cleanupHistory(ctx, cj, jobs)
	requeue, err := c.schedule(ctx, cj, st)
	if werr := c.writeStatus(ctx, cj, st); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if requeue > 0 {
		c.queue.AddAfter(key, requeue)
	}
	return nil
}

// reconcileActive brings status.active in line with the jobs: finished
// ones leave it (a success moving lastSuccessfulTime), vanished ones
// too, and an unfinished job this controller created but forgot to
// record (a crash between create and status write) joins it.
func (c *Controller) reconcileActive(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus, jobs []*batchv1.Job) error {
	byUID := map[types.UID]*batchv1.Job{}
	for _, j := range jobs {
		byUID[j.UID] = j
		active := inActive(st, j.UID)
		done, failed := finished(j)
		switch {
		case !active && !done:
			if _, ok := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; ok {
				st.Active = append(st.Active, jobRef(j))
			} else {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
			}
		case active && done:
			removeActive(st, j.UID)
			cond := batchv1.JobComplete
			if failed {
				cond = batchv1.JobFailed
			}
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, cond)
		}
		if done && !failed && j.Status.CompletionTime != nil &&
			(st.LastSuccessfulTime == nil || j.Status.CompletionTime.After(st.LastSuccessfulTime.Time)) {
			st.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
		}
	}
	for _, ref := range append([]corev1.ObjectReference(nil), st.Active...) {
		if _, ok := byUID[ref.UID]; ok {
			continue
		}
		// The cache may be behind: ask the API before forgetting a job.
		j, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && j.UID != ref.UID):
			removeActive(st, ref.UID)
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
		case err != nil:
			return fmt.Errorf("cronjob: looking up job %s/%s: %w", ref.Namespace, ref.Name, err)
		}
	}
	return nil
}

// schedule starts the run due now, if any, and returns when to look
// again.
func (c *Controller) schedule(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus) (time.Duration, error) {
	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	sched, loc, err := parseSchedule(cj)
	if err != nil {
		reason := "InvalidSchedule"
		if cj.Spec.TimeZone != nil {
			if _, tzErr := time.LoadLocation(*cj.Spec.TimeZone); tzErr != nil {
				reason = "UnknownTimeZone"
			}
		}
		// Retrying will not fix the spec; its next update will be synced.
		c.recorder.Eventf(cj, corev1.EventTypeWarning, reason, "%v", err)
		return 0, nil
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, nil
	}
	now := c.clock.Now()
	next := func() time.Duration { return sched.Next(now).Sub(now) + nextSlack }
	earliest := cj.CreationTimestamp.Time
	if st.LastScheduleTime != nil {
		earliest = st.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if limit := now.Add(-time.Duration(*d) * time.Second); limit.After(earliest) {
			earliest = limit
		}
	}
	due, tooMany := mostRecent(sched, earliest, now)
	if tooMany {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if due == nil {
		return next(), nil
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && due.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", due.UTC().Format(time.RFC1123Z))
		return next(), nil
	}
	name := jobName(cj, *due)
	for _, ref := range st.Active {
		if ref.Name == name {
			return next(), nil // this run is already going
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(st.Active) > 0 {
			// The run waits for the previous one, as long as its
			// starting deadline allows.
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next(), nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range append([]corev1.ObjectReference(nil), st.Active...) {
			if err := c.deleteJob(ctx, cj, ref.Namespace, ref.Name, ref.UID); err != nil {
				return 0, err
			}
			removeActive(st, ref.UID)
		}
	}
	job, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, newJob(cj, *due, loc), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created before, by this controller (another leader, or before
		// a crash) if this cron job owns it.
		existing, gerr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return 0, gerr
		}
		if !clusterutil.ControlledBy(existing, cj.UID) {
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %s exists and is not this cron job's", name)
			return next(), nil
		}
		job = existing
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return 0, nil
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, fmt.Errorf("cronjob: creating %s/%s: %w", cj.Namespace, name, err)
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", job.Name)
		c.log.Info("created job", "cronjob", cj.Namespace+"/"+cj.Name, "job", job.Name, "scheduled", due.UTC())
	}
	if done, _ := finished(job); !done && !inActive(st, job.UID) {
		st.Active = append(st.Active, jobRef(job))
	}
	st.LastScheduleTime = &metav1.Time{Time: *due}
	return next(), nil
}

// cleanupHistory deletes the oldest finished jobs beyond the history
// limits.
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch done, f := finished(j); {
		case done && f:
			failed = append(failed, j)
		case done:
			succeeded = append(succeeded, j)
		}
	}
	for _, group := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if group.limit == nil || len(group.jobs) <= int(*group.limit) {
			continue
		}
		sort.Slice(group.jobs, func(i, j int) bool { return startTime(group.jobs[i]).Before(startTime(group.jobs[j])) })
		for _, j := range group.jobs[:len(group.jobs)-int(*group.limit)] {
			if err := c.deleteJob(ctx, cj, j.Namespace, j.Name, j.UID); err != nil {
				c.log.Warn("deleting an old job", "job", j.Namespace+"/"+j.Name, "err", err)
			}
		}
	}
}

func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, ns, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	err := c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return fmt.Errorf("cronjob: deleting job %s/%s: %w", ns, name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus) error {
	if equality.Semantic.DeepEqual(*st, cj.Status) {
		return nil
	}
	cp := cj.DeepCopy()
	cp.Status = *st
	if _, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cronjob: updating the status of %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	return nil
}

// jobName names the run scheduled at t: the same run always gets the
// same name, whichever controller creates it.
func jobName(cj *batchv1.CronJob, t time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, t.Unix()/60)
}

// newJob builds the job of the run scheduled at t from cj's template.
func newJob(cj *batchv1.CronJob, t time.Time, loc *time.Location) *batchv1.Job {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := tmpl.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = t.In(loc).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName(cj, t), Namespace: cj.Namespace, Labels: tmpl.Labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: tmpl.Spec,
	}
}

// finished reports whether j finished, and whether it failed.
func finished(j *batchv1.Job) (done, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

func startTime(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(), Namespace: j.Namespace,
		Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}
}

func inActive(st *batchv1.CronJobStatus, uid types.UID) bool {
	for _, r := range st.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func removeActive(st *batchv1.CronJobStatus, uid types.UID) {
	out := st.Active[:0]
	for _, r := range st.Active {
		if r.UID != uid {
			out = append(out, r)
		}
	}
	st.Active = out
	if len(st.Active) == 0 {
		st.Active = nil
	}
}
