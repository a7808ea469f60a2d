// Package cronjob creates Jobs on a schedule, as Kubernetes' CronJob
// controller does: standard cron schedules (with time zones), the Allow,
// Forbid and Replace concurrency policies, startingDeadlineSeconds,
// suspend, and history limits for finished jobs. Each run's job is named
// after its scheduled time in minutes since the epoch, so a run is never
// created twice.
package cronjob

import (
	"context"
	"fmt"
	"log/slog"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "cronjob"

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller is the CronJob controller. Time comes from the context's
// clock, so tests drive schedules with a fake one.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	queue    clusterutil.Queue
	clock    clock.WithTicker
	recorder record.EventRecorder
	log      *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context) (*Controller, error) {
	cjInf := c.Informers.Batch().V1().CronJobs()
	jobInf := c.Informers.Batch().V1().Jobs()
	ctl := &Controller{
		client: c.Client, cronJobs: cjInf.Lister(), jobs: jobInf.Lister(),
		queue: clusterutil.NewQueue(Name, c.Clock), clock: c.Clock,
		recorder: c.Recorder("cronjob-controller"), log: c.Logger.With("controller", Name),
	}
	if _, err := cjInf.Informer().AddEventHandler(clusterutil.Enqueue(ctl.queue)); err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	enqueueOwner := func(obj any) {
		job, ok := clusterutil.Untombstone(obj).(*batchv1.Job)
		if !ok {
			return
		}
		if ref := clusterutil.ControllerOf(job); ref != nil && ref.Kind == "CronJob" {
			ctl.queue.Add(job.Namespace + "/" + ref.Name)
		}
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueOwner,
		UpdateFunc: func(_, obj any) { enqueueOwner(obj) },
		DeleteFunc: enqueueOwner,
	}); err != nil {
		return nil, fmt.Errorf("cronjob: %w", err)
	}
	return ctl, nil
}

// Run syncs cron jobs until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}
