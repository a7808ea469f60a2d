// Package ttlafterfinished deletes finished Jobs once their
// ttlSecondsAfterFinished has passed, as Kubernetes' TTL-after-finished
// controller does; their pods go with them (background propagation).
package ttlafterfinished

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "ttl-after-finished"

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller deletes expired finished jobs.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	queue  clusterutil.Queue
	clock  clock.WithTicker
	log    *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context) (*Controller, error) {
	inf := c.Informers.Batch().V1().Jobs()
	ctl := &Controller{client: c.Client, jobs: inf.Lister(), queue: clusterutil.NewQueue(Name, c.Clock), clock: c.Clock,
		log: c.Logger.With("controller", Name)}
	enqueue := func(obj any) {
		if job, ok := obj.(*batchv1.Job); ok && job.DeletionTimestamp == nil && needsCleanup(job) {
			if key, ok := clusterutil.KeyOf(job); ok {
				ctl.queue.Add(key)
			}
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("ttlafterfinished: %w", err)
	}
	return ctl, nil
}

// Run deletes expired jobs until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if err != nil || job.DeletionTimestamp != nil || !needsCleanup(job) {
		return nil
	}
	if wait := expiresIn(job, c.clock.Now()); wait > 0 {
		c.queue.AddAfter(key, wait)
		return nil
	}
	// The TTL may have been changed since the cache saw the job: decide
	// on the job as stored.
	fresh, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if fresh.DeletionTimestamp != nil || !needsCleanup(fresh) {
		return nil
	}
	if wait := expiresIn(fresh, c.clock.Now()); wait > 0 {
		c.queue.AddAfter(key, wait)
		return nil
	}
	background := metav1.DeletePropagationBackground
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &background,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("ttlafterfinished: deleting %s: %w", key, err)
	}
	c.log.Info("deleted a finished job past its TTL", "job", key)
	return nil
}

// needsCleanup reports whether job has a TTL and has finished.
func needsCleanup(job *batchv1.Job) bool {
	_, ok := finishTime(job)
	return job.Spec.TTLSecondsAfterFinished != nil && ok
}

// finishTime is when job got its Complete or Failed condition.
func finishTime(job *batchv1.Job) (time.Time, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// expiresIn is how long job has left to live, zero once expired.
func expiresIn(job *batchv1.Job, now time.Time) time.Duration {
	done, _ := finishTime(job)
	left := done.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second).Sub(now)
	if left < 0 {
		return 0
	}
	return left
}
