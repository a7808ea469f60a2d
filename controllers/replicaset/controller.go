// Package replicaset is the ReplicaSet controller: it keeps spec.replicas
// pods of each ReplicaSet in existence, adopting matching orphans and
// releasing pods that no longer match, and reports how many are ready and
// available in the ReplicaSet's status, as Kubernetes' controller does.
package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/expectations"
	"cairn/controllers/internal/keyqueue"
	"cairn/controllers/internal/podcontrol"
	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "replicaset"

// BurstReplicas caps the pods one sync creates or deletes, as Kubernetes
// does, so that a huge scale change is spread over several syncs.
const BurstReplicas = 500

var kind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller is the ReplicaSet controller.
type Controller struct {
	client     kubernetes.Interface
	rsLister   appslisters.ReplicaSetLister
	rsIndex    cache.Indexer
	podLister  corelisters.PodLister
	podIndex   cache.Indexer
	queue      keyqueue.Queue
	exp        *expectations.Expectations
	pods       *podcontrol.Control
	log        *slog.Logger
	clock      clock.WithTicker
	rsSynced   cache.InformerSynced
	podsSynced cache.InformerSynced
}

// New builds the controller from the manager's context.
func New(c *controllers.Context) (*Controller, error) {
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	for _, inf := range []cache.SharedIndexInformer{rsInf.Informer(), podInf.Informer()} {
		if err := controllerref.AddIndex(inf); err != nil {
			return nil, fmt.Errorf("replicaset: %w", err)
		}
	}
	rc := &Controller{
		client:   c.Client,
		rsLister: rsInf.Lister(), rsIndex: rsInf.Informer().GetIndexer(),
		podLister: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(),
		queue:    keyqueue.New(Name),
		exp:      expectations.New(c.Clock),
		pods:     &podcontrol.Control{Client: c.Client, Recorder: c.Recorder("replicaset-controller")},
		log:      c.Logger.With("controller", Name),
		clock:    c.Clock,
		rsSynced: rsInf.Informer().HasSynced, podsSynced: podInf.Informer().HasSynced,
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rc.enqueue,
		UpdateFunc: func(_, cur any) { rc.enqueue(cur) },
		DeleteFunc: rc.deleteReplicaSet,
	}); err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rc.addPod,
		UpdateFunc: rc.updatePod,
		DeleteFunc: rc.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("replicaset: %w", err)
	}
	return rc, nil
}

// Run syncs ReplicaSets with workers workers until ctx ends.
func (rc *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), rc.rsSynced, rc.podsSynced) {
		return
	}
	rc.log.Info("starting", "workers", workers)
	keyqueue.Run(ctx, rc.queue, workers, rc.sync, rc.log)
}

func (rc *Controller) enqueue(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		rc.queue.Add(key)
	}
}

func (rc *Controller) enqueueAfter(rs *appsv1.ReplicaSet, d time.Duration) {
	if key, ok := keyqueue.Key(rs); ok {
		rc.queue.AddAfter(key, d)
	}
}

func (rc *Controller) deleteReplicaSet(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		rc.exp.Delete(key)
		rc.queue.Add(key)
	}
}

// resolve returns the ReplicaSet ref names, if it is the one in the cache.
func (rc *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	owner, _ := controllerref.Resolve(ref, kind.Kind, rc.rsLister.ReplicaSets(namespace).Get)
	return owner
}

// matching returns the ReplicaSets whose selectors match an orphan pod, so
// they can consider adopting it.
func (rc *Controller) matching(pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := rc.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerref.Selecting(all, func(o *appsv1.ReplicaSet) *metav1.LabelSelector { return o.Spec.Selector }, pod.Labels)
}

func (rc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen already terminating (after a relist): count it as deleted.
		rc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := rc.resolve(pod.Namespace, ref); rs != nil {
			key, _ := keyqueue.Key(rs)
			rc.exp.CreationObserved(key)
			rc.queue.Add(key)
		}
		return
	}
	for _, rs := range rc.matching(pod) {
		rc.enqueue(rs)
	}
}

func (rc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion has begun: the replacement need not wait
		// for the kubelet to finish it.
		rc.deletePod(curPod)
		if labelsChanged {
			rc.deletePod(oldPod)
		}
		return
	}
	rs, owned := controllerref.Updated(oldPod, curPod, rc.resolve, rc.matching, rc.enqueue)
	// Pods carry no Available condition: come back when this one will
	// have been ready for minReadySeconds.
	if owned && !podutil.IsReady(oldPod) && podutil.IsReady(curPod) && rs.Spec.MinReadySeconds > 0 {
		rc.enqueueAfter(rs, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

func (rc *Controller) deletePod(obj any) {
	pod, ok := controllerref.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	rs := rc.resolve(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, _ := keyqueue.Key(rs)
	rc.exp.DeletionObserved(key, expectations.PodKey(pod.Namespace, pod.Name))
	rc.queue.Add(key)
}
