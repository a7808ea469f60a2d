package job

import (
	"context"

	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// syncOrphan removes the tracking finalizer of a pod no unfinished job
// accounts for any more (its job was deleted, finished, or released it),
// so the pod can be deleted. The job is looked up in the API, not only in
// the cache, before the finalizer goes.
func (c *Controller) syncOrphan(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if err != nil || !clusterutil.HasFinalizer(pod, batchv1.JobTrackingFinalizer) {
		return nil
	}
	if ref := clusterutil.ControllerOf(pod); ref != nil && ref.Kind == "Job" {
		job, err := c.jobs.Jobs(ns).Get(ref.Name)
		if apierrors.IsNotFound(err) {
			job, err = c.client.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		}
		switch {
		case err == nil && job.UID == ref.UID && !finished(job):
			return nil // its job counts it
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
	}
	if err := c.removeFinalizer(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.log.Debug("freed an orphaned job pod", "pod", key)
	return nil
}
