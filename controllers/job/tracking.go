package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// finalizerWorkers bounds the finalizer removals sent at once.
const finalizerWorkers = 8

// track writes the job's status in the three steps that count each pod
// exactly once: newly finished pods go to uncountedTerminatedPods (and
// their indexes to completedIndexes); their finalizers are removed; the
// pods whose finalizer is gone move to the succeeded and failed counters.
// A finishing job whose pods are all accounted for and stopped gets its
// terminal condition in the last write.
func (c *Controller) track(ctx context.Context, v *view, st *batchv1.JobStatus) error {
	job := v.job
	st.Active = int32(len(v.active))
	st.Ready = ptr.To(int32(v.ready))
	st.Terminating = ptr.To(int32(v.terminating))
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u := st.UncountedTerminatedPods
	for _, p := range v.newSucceeded {
		u.Succeeded = append(u.Succeeded, p.UID)
	}
	for _, p := range v.newFailed {
		u.Failed = append(u.Failed, p.UID)
	}
	if v.indexed {
		st.CompletedIndexes = v.succeededIdx.String()
	}
	if !equality.Semantic.DeepEqual(*st, job.Status) {
		updated, err := c.updateStatus(ctx, job, st)
		if err != nil {
			return err
		}
		job = updated
		if len(v.newSucceeded)+len(v.newFailed) > 0 {
			c.backoff.set(v.key, v.backoff)
		}
	}

	freed := c.removeFinalizers(ctx, v.key, v.finalize)

	st = job.Status.DeepCopy()
	u = st.UncountedTerminatedPods
	if u == nil {
		u = &batchv1.UncountedTerminatedPods{}
		st.UncountedTerminatedPods = u
	}
	present := make(map[types.UID]*corev1.Pod, len(v.pods))
	for _, p := range v.pods {
		present[p.UID] = p
	}
	accounted := func(uid types.UID) bool {
		p, ok := present[uid]
		return !ok || freed[uid] || !clusterutil.HasFinalizer(p, batchv1.JobTrackingFinalizer)
	}
	u.Succeeded = moveCounted(u.Succeeded, accounted, &st.Succeeded)
	u.Failed = moveCounted(u.Failed, accounted, &st.Failed)
	pending := len(u.Succeeded) + len(u.Failed)
	for _, p := range v.finalize {
		if !freed[p.UID] {
			pending++
		}
	}
	if f := v.finishing; f != nil && pending == 0 && len(v.active) == 0 && v.terminating == 0 {
		if f.Type == batchv1.JobFailureTarget {
			setCondition(st, batchv1.JobFailed, corev1.ConditionTrue, f.Reason, f.Message, v.now)
		} else {
			setCondition(st, batchv1.JobComplete, corev1.ConditionTrue, f.Reason, f.Message, v.now)
			st.CompletionTime = &v.now
			c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		}
	}
	if equality.Semantic.DeepEqual(*st, job.Status) {
		return nil
	}
	_, err := c.updateStatus(ctx, job, st)
	return err
}

// moveCounted keeps the UIDs not yet accounted for and adds the others to
// counter.
func moveCounted(uids []types.UID, accounted func(types.UID) bool, counter *int32) []types.UID {
	var keep []types.UID
	for _, uid := range uids {
		if accounted(uid) {
			*counter++
		} else {
			keep = append(keep, uid)
		}
	}
	return keep
}

func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job, st *batchv1.JobStatus) (*batchv1.Job, error) {
	j := job.DeepCopy()
	j.Status = *st
	got, err := c.client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("job: updating the status of %s/%s: %w", j.Namespace, j.Name, err)
	}
	return got, nil
}

// removeFinalizers removes the tracking finalizer from pods and returns
// the UIDs of those that no longer have it (or no longer exist).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) map[types.UID]bool {
	freed := map[types.UID]bool{}
	if len(pods) == 0 {
		return freed
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan *corev1.Pod)
	for i := 0; i < min(finalizerWorkers, len(pods)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				c.removing.add(key, p.UID)
				err := c.removeFinalizer(ctx, p)
				if err != nil && !apierrors.IsNotFound(err) {
					c.removing.remove(key, p.UID)
					c.log.Debug("removing a pod's tracking finalizer", "pod", p.Namespace+"/"+p.Name, "err", err)
					continue
				}
				if apierrors.IsNotFound(err) {
					c.removing.remove(key, p.UID)
				}
				mu.Lock()
				freed[p.UID] = true
				mu.Unlock()
			}
		}()
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	return freed
}

// removeFinalizer patches the tracking finalizer out of pod, and only out
// of this pod: the uid in the patch fails it if the name was reused.
func (c *Controller) removeFinalizer(ctx context.Context, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		"uid":                                 pod.UID,
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
