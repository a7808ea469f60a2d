// Package job runs Jobs to completion, as Kubernetes' job controller
// does: it keeps up to parallelism pods running until completions pods
// have succeeded (NonIndexed), or until each index in [0, completions)
// has (Indexed); it retries failed pods with an exponential backoff until
// backoffLimit, stops at activeDeadlineSeconds, honours suspend, and
// reports the outcome with SuccessCriteriaMet/Complete or
// FailureTarget/Failed conditions.
//
// Pods are counted through the batch.kubernetes.io/job-tracking
// finalizer: a finished pod's UID is first written to
// status.uncountedTerminatedPods, then its finalizer removed, and only
// then is it moved to the succeeded or failed counter. A pod is counted
// once however the controller or its informer lag.
package job

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "job"

// Config tunes the controller; zero values take the defaults.
type Config struct {
	// BackoffBase is the delay before recreating a pod after the first
	// failure (10s); it doubles with each further failure.
	BackoffBase time.Duration
	// BackoffMax caps that delay (6m).
	BackoffMax time.Duration
}

func (c Config) withDefaults() Config {
	if c.BackoffBase <= 0 {
		c.BackoffBase = 10 * time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 6 * time.Minute
	}
	return c
}

// Descriptor registers the controller with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c, cfg)
	}}
}

// Controller is the job controller.
type Controller struct {
	client   kubernetes.Interface
	jobs     batchlisters.JobLister
	pods     corelisters.PodLister
	clock    clock.WithTicker
	recorder record.EventRecorder
	log      *slog.Logger
	cfg      Config

	queue clusterutil.Queue
	// orphans holds pods that keep the tracking finalizer but whose job
	// is gone, finished, or no longer owns them.
	orphans clusterutil.Queue

	expectations *clusterutil.Expectations
	// removing holds, per job key, the UIDs of pods whose finalizer
	// removal was sent but not yet seen by the informer: such a pod
	// still looks uncounted and must not be counted again.
	removing *uidSet
	backoff  *backoffStore
}

// New builds the controller on c's informers.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	jobInf := c.Informers.Batch().V1().Jobs()
	podInf := c.Informers.Core().V1().Pods()
	ctl := &Controller{
		client: c.Client, jobs: jobInf.Lister(), pods: podInf.Lister(), clock: c.Clock,
		recorder: c.Recorder("job-controller"), log: c.Logger.With("controller", Name), cfg: cfg.withDefaults(),
		queue: clusterutil.NewQueue(Name, c.Clock), orphans: clusterutil.NewQueue(Name+"-orphan-pods", c.Clock),
		expectations: clusterutil.NewExpectations(c.Clock), removing: newUIDSet(), backoff: newBackoffStore(),
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctl.enqueueJob,
		UpdateFunc: func(_, obj any) { ctl.enqueueJob(obj) },
		DeleteFunc: ctl.deleteJob,
	}); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctl.addPod,
		UpdateFunc: ctl.updatePod,
		DeleteFunc: ctl.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return ctl, nil
}

// Run syncs jobs, and frees orphaned pods, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	}()
	go func() {
		defer wg.Done()
		clusterutil.RunWorkers(ctx, c.log, c.orphans, 1, c.syncOrphan)
	}()
	wg.Wait()
}

func (c *Controller) enqueueJob(obj any) {
	if key, ok := clusterutil.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// deleteJob forgets a deleted job and frees its pods' finalizers: the
// garbage collector deletes them, and they must be allowed to go.
func (c *Controller) deleteJob(obj any) {
	c.enqueueJob(obj)
	job, ok := clusterutil.Untombstone(obj).(*batchv1.Job)
	if !ok {
		return
	}
	sel, err := selectorOf(job)
	if err != nil {
		return
	}
	pods, _ := c.pods.Pods(job.Namespace).List(sel)
	for _, p := range pods {
		if clusterutil.HasFinalizer(p, batchv1.JobTrackingFinalizer) {
			c.orphans.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// jobKeyOf returns the key of the job controlling pod.
func jobKeyOf(pod *corev1.Pod) (string, types.UID, bool) {
	ref := clusterutil.ControllerOf(pod)
	if ref == nil || ref.Kind != "Job" {
		return "", "", false
	}
	return pod.Namespace + "/" + ref.Name, ref.UID, true
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key, _, ok := jobKeyOf(pod)
	if !ok {
		c.checkOrphan(pod)
		return
	}
	if pod.DeletionTimestamp != nil {
		c.expectations.DeletionObserved(key)
	} else {
		c.expectations.CreationObserved(key)
	}
	c.queue.Add(key)
	c.checkOrphan(pod)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == pod.ResourceVersion {
		return
	}
	key, _, ok := jobKeyOf(pod)
	if ok {
		if pod.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
			c.expectations.DeletionObserved(key)
		}
		if !clusterutil.HasFinalizer(pod, batchv1.JobTrackingFinalizer) {
			c.removing.remove(key, pod.UID)
		}
		c.queue.Add(key)
	}
	if oldKey, _, ok := jobKeyOf(old); ok && oldKey != key {
		c.queue.Add(oldKey)
	}
	c.checkOrphan(pod)
}

func (c *Controller) deletePod(obj any) {
	pod, ok := clusterutil.Untombstone(obj).(*corev1.Pod)
	if !ok {
		return
	}
	key, _, ok := jobKeyOf(pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp == nil {
		c.expectations.DeletionObserved(key)
	}
	c.removing.remove(key, pod.UID)
	c.queue.Add(key)
}

// checkOrphan queues pod for finalizer removal when it has the tracking
// finalizer but no live, unfinished job in the cache to account for it.
func (c *Controller) checkOrphan(pod *corev1.Pod) {
	if !clusterutil.HasFinalizer(pod, batchv1.JobTrackingFinalizer) {
		return
	}
	ref := clusterutil.ControllerOf(pod)
	if ref != nil && ref.Kind == "Job" {
		if job, err := c.jobs.Jobs(pod.Namespace).Get(ref.Name); err == nil && job.UID == ref.UID && !finished(job) {
			return
		}
	}
	c.orphans.Add(pod.Namespace + "/" + pod.Name)
}

func selectorOf(job *batchv1.Job) (labels.Selector, error) {
	if job.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(job.Spec.Selector)
}

// uidSet is a per-key set of pod UIDs, safe for concurrent use.
type uidSet struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

func newUIDSet() *uidSet { return &uidSet{uids: map[string]map[types.UID]bool{}} }

func (s *uidSet) add(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uids[key] == nil {
		s.uids[key] = map[types.UID]bool{}
	}
	s.uids[key][uid] = true
}

func (s *uidSet) remove(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids[key], uid)
	if len(s.uids[key]) == 0 {
		delete(s.uids, key)
	}
}

func (s *uidSet) has(key string, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids[key][uid]
}

func (s *uidSet) len(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.uids[key])
}

func (s *uidSet) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids, key)
}
