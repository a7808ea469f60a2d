// Package deployment is the Deployment controller: it rolls a
// Deployment's pod template out through ReplicaSets named
// <deployment>-<pod-template-hash>, with the RollingUpdate (maxSurge,
// maxUnavailable) or Recreate strategy, scales them proportionally when
// only the replica count changes, keeps revisionHistoryLimit old
// ReplicaSets for rollbacks, honours spec.paused, and reports progress
// against progressDeadlineSeconds, as Kubernetes' controller does, so that
// kubectl rollout status, history and undo work unchanged.
package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/keyqueue"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "deployment"

var (
	kind   = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller is the Deployment controller.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	rsIndex   cache.Indexer
	podLister corelisters.PodLister
	podIndex  cache.Indexer
	queue     keyqueue.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	clock     clock.WithTicker
	synced    []cache.InformerSynced
}

// New builds the controller from the manager's context.
func New(c *controllers.Context) (*Controller, error) {
	dInf := c.Informers.Apps().V1().Deployments()
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	for _, inf := range []cache.SharedIndexInformer{rsInf.Informer(), podInf.Informer()} {
		if err := controllerref.AddIndex(inf); err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
	}
	dc := &Controller{
		client:  c.Client,
		dLister: dInf.Lister(), rsLister: rsInf.Lister(), rsIndex: rsInf.Informer().GetIndexer(),
		podLister: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(),
		queue:    keyqueue.New(Name),
		recorder: c.Recorder("deployment-controller"),
		log:      c.Logger.With("controller", Name),
		clock:    c.Clock,
		synced:   []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: dc.enqueue, UpdateFunc: func(_, cur any) { dc.enqueue(cur) }, DeleteFunc: dc.enqueue}},
		{rsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: dc.addReplicaSet, UpdateFunc: dc.updateReplicaSet, DeleteFunc: dc.deleteReplicaSet}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: dc.deletePod}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
	}
	return dc, nil
}

// Run syncs Deployments with workers workers until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), dc.synced...) {
		return
	}
	dc.log.Info("starting", "workers", workers)
	keyqueue.Run(ctx, dc.queue, workers, dc.sync, dc.log)
}

func (dc *Controller) enqueue(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		dc.queue.Add(key)
	}
}

func (dc *Controller) enqueueAfter(d *appsv1.Deployment, after time.Duration) {
	if key, ok := keyqueue.Key(d); ok {
		dc.queue.AddAfter(key, after)
	}
}

// resolve returns the Deployment ref names, if it is the one cached.
func (dc *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	owner, _ := controllerref.Resolve(ref, kind.Kind, dc.dLister.Deployments(namespace).Get)
	return owner
}

// matching returns the Deployments whose selector matches an orphan
// ReplicaSet, which may want to adopt it.
func (dc *Controller) matching(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := dc.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerref.Selecting(all, func(o *appsv1.Deployment) *metav1.LabelSelector { return o.Spec.Selector }, rs.Labels)
}

func (dc *Controller) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		dc.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolve(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
		return
	}
	for _, d := range dc.matching(rs) {
		dc.enqueue(d)
	}
}

func (dc *Controller) updateReplicaSet(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if oldRS.ResourceVersion == curRS.ResourceVersion {
		return
	}
	controllerref.Updated(oldRS, curRS, dc.resolve, dc.matching, dc.enqueue)
}

func (dc *Controller) deleteReplicaSet(obj any) {
	rs, ok := controllerref.Deleted[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.resolve(rs.Namespace, ref); d != nil {
			dc.enqueue(d)
		}
	}
}

// deletePod wakes a Recreate Deployment when one of its old pods goes:
// it waits for all of them to be gone before creating new ones.
func (dc *Controller) deletePod(obj any) {
	pod, ok := controllerref.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := dc.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	dref := metav1.GetControllerOf(rs)
	if dref == nil {
		return
	}
	if d := dc.resolve(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.enqueue(d)
	}
}
