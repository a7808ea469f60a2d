// Package statefulset is the StatefulSet controller: it gives each set
// pods with stable names (<set>-<ordinal>), hostnames and claims, creates
// them in ordinal order and removes them in reverse (OrderedReady) or all
// at once (Parallel), and rolls template changes out from the highest
// ordinal down to the partition (RollingUpdate) or leaves that to pod
// deletions (OnDelete), keeping the set's history in ControllerRevisions,
// as Kubernetes' controller does.
package statefulset

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
const Name = "statefulset"

var kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller is the StatefulSet controller.
type Controller struct {
	client    kubernetes.Interface
	setLister appslisters.StatefulSetLister
	podIndex  cache.Indexer
	// revIndex holds the ControllerRevisions, indexed by controller.
	revIndex  cache.Indexer
	pvcLister corelisters.PersistentVolumeClaimLister
	queue     keyqueue.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	clock     clock.WithTicker
	synced    []cache.InformerSynced
}

// New builds the controller from the manager's context.
func New(c *controllers.Context) (*Controller, error) {
	setInf := c.Informers.Apps().V1().StatefulSets()
	podInf := c.Informers.Core().V1().Pods()
	pvcInf := c.Informers.Core().V1().PersistentVolumeClaims()
	revInf := c.Informers.Apps().V1().ControllerRevisions()
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), revInf.Informer()} {
		if err := controllerref.AddIndex(inf); err != nil {
			return nil, fmt.Errorf("statefulset: %w", err)
		}
	}
	sc := &Controller{
		client:    c.Client,
		setLister: setInf.Lister(), podIndex: podInf.Informer().GetIndexer(), revIndex: revInf.Informer().GetIndexer(),
		pvcLister: pvcInf.Lister(),
		queue:     keyqueue.New(Name),
		recorder:  c.Recorder("statefulset-controller"),
		log:       c.Logger.With("controller", Name),
		clock:     c.Clock,
		synced: []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced, pvcInf.Informer().HasSynced,
			revInf.Informer().HasSynced},
	}
	if _, err := setInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: sc.enqueue, UpdateFunc: func(_, cur any) { sc.enqueue(cur) }, DeleteFunc: sc.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: sc.addPod, UpdateFunc: sc.updatePod, DeleteFunc: sc.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	return sc, nil
}

// Run syncs StatefulSets with workers workers until ctx ends.
func (sc *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), sc.synced...) {
		return
	}
	sc.log.Info("starting", "workers", workers)
	keyqueue.Run(ctx, sc.queue, workers, sc.sync, sc.log)
}

func (sc *Controller) enqueue(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		sc.queue.Add(key)
	}
}

func (sc *Controller) enqueueAfter(set *appsv1.StatefulSet, d time.Duration) {
	if key, ok := keyqueue.Key(set); ok {
		sc.queue.AddAfter(key, d)
	}
}

func (sc *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	owner, _ := controllerref.Resolve(ref, kind.Kind, sc.setLister.StatefulSets(namespace).Get)
	return owner
}

// matching returns the sets that may adopt an orphan pod.
func (sc *Controller) matching(pod *corev1.Pod) []*appsv1.StatefulSet {
	all, err := sc.setLister.StatefulSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.StatefulSet
	for _, o := range controllerref.Selecting(all, func(o *appsv1.StatefulSet) *metav1.LabelSelector { return o.Spec.Selector }, pod.Labels) {
		if isMemberOf(o, pod) {
			out = append(out, o)
		}
	}
	return out
}

func (sc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		sc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if set := sc.resolve(pod.Namespace, ref); set != nil {
			sc.enqueue(set)
		}
		return
	}
	for _, set := range sc.matching(pod) {
		sc.enqueue(set)
	}
}

func (sc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	controllerref.Updated(oldPod, curPod, sc.resolve, sc.matching, sc.enqueue)
}

func (sc *Controller) deletePod(obj any) {
	pod, ok := controllerref.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if set := sc.resolve(pod.Namespace, ref); set != nil {
			sc.enqueue(set)
		}
	}
}
