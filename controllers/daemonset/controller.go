// Package daemonset is the DaemonSet controller: it keeps one pod of each
// DaemonSet on every node its node selector, required node affinity and
// tolerations admit, pinning each pod to its node through required node
// affinity for the scheduler to bind (the pod gets no nodeName), and rolls
// template changes out node by node within maxUnavailable or maxSurge
// (RollingUpdate), or as pods are deleted (OnDelete), keeping the
// DaemonSet's history in ControllerRevisions, as Kubernetes' controller
// does.
package daemonset

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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "daemonset"

// BurstReplicas caps the pods one sync creates or deletes.
const BurstReplicas = 250

var kind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller is the DaemonSet controller.
type Controller struct {
	client     kubernetes.Interface
	dsLister   appslisters.DaemonSetLister
	nodeLister corelisters.NodeLister
	podLister  corelisters.PodLister
	podIndex   cache.Indexer
	// revIndex holds the ControllerRevisions, indexed by controller.
	revIndex cache.Indexer
	queue    keyqueue.Queue
	exp      *expectations.Expectations
	pods     *podcontrol.Control
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.WithTicker
	// failedBackoff spaces out the replacement of pods that keep failing
	// on a node, which would otherwise be a hot loop with the kubelet.
	failedBackoff *flowcontrol.Backoff
	synced        []cache.InformerSynced
}

// New builds the controller from the manager's context.
func New(c *controllers.Context) (*Controller, error) {
	dsInf := c.Informers.Apps().V1().DaemonSets()
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	revInf := c.Informers.Apps().V1().ControllerRevisions()
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), revInf.Informer()} {
		if err := controllerref.AddIndex(inf); err != nil {
			return nil, fmt.Errorf("daemonset: %w", err)
		}
	}
	recorder := c.Recorder("daemonset-controller")
	dc := &Controller{
		client:   c.Client,
		dsLister: dsInf.Lister(), nodeLister: nodeInf.Lister(), podLister: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(),
		revIndex:      revInf.Informer().GetIndexer(),
		queue:         keyqueue.New(Name),
		exp:           expectations.New(c.Clock),
		pods:          &podcontrol.Control{Client: c.Client, Recorder: recorder},
		recorder:      recorder,
		log:           c.Logger.With("controller", Name),
		clock:         c.Clock,
		failedBackoff: flowcontrol.NewBackOffWithJitter(time.Second, 15*time.Minute, 0),
		synced: []cache.InformerSynced{dsInf.Informer().HasSynced, podInf.Informer().HasSynced, nodeInf.Informer().HasSynced,
			revInf.Informer().HasSynced},
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: dc.enqueue, UpdateFunc: func(_, cur any) { dc.enqueue(cur) }, DeleteFunc: dc.deleteDaemonSet}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: dc.addPod, UpdateFunc: dc.updatePod, DeleteFunc: dc.deletePod}},
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { dc.enqueueAll() }, UpdateFunc: dc.updateNode, DeleteFunc: func(any) { dc.enqueueAll() }}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("daemonset: %w", err)
		}
	}
	return dc, nil
}

// Run syncs DaemonSets with workers workers until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), dc.synced...) {
		return
	}
	dc.log.Info("starting", "workers", workers)
	go dc.gcBackoff(ctx)
	keyqueue.Run(ctx, dc.queue, workers, dc.sync, dc.log)
}

func (dc *Controller) gcBackoff(ctx context.Context) {
	t := dc.clock.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			dc.failedBackoff.GC()
		}
	}
}

func (dc *Controller) enqueue(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		dc.queue.Add(key)
	}
}

func (dc *Controller) enqueueAfter(ds *appsv1.DaemonSet, d time.Duration) {
	if key, ok := keyqueue.Key(ds); ok {
		dc.queue.AddAfter(key, d)
	}
}

func (dc *Controller) enqueueAll() {
	all, err := dc.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		dc.enqueue(ds)
	}
}

func (dc *Controller) deleteDaemonSet(obj any) {
	if key, ok := keyqueue.Key(obj); ok {
		dc.exp.Delete(key)
		dc.queue.Add(key)
	}
}

// updateNode wakes the DaemonSets when a node changes in a way that can
// change where daemons run: labels, taints, unschedulability, conditions.
func (dc *Controller) updateNode(old, cur any) {
	o, c := old.(*corev1.Node), cur.(*corev1.Node)
	if reflect.DeepEqual(o.Labels, c.Labels) && reflect.DeepEqual(o.Spec, c.Spec) && sameConditions(o, c) {
		return
	}
	dc.enqueueAll()
}

func sameConditions(a, b *corev1.Node) bool {
	if len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	st := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, c := range a.Status.Conditions {
		st[c.Type] = c.Status
	}
	for _, c := range b.Status.Conditions {
		if st[c.Type] != c.Status {
			return false
		}
	}
	return true
}

func (dc *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	owner, _ := controllerref.Resolve(ref, kind.Kind, dc.dsLister.DaemonSets(namespace).Get)
	return owner
}

func (dc *Controller) matching(pod *corev1.Pod) []*appsv1.DaemonSet {
	all, err := dc.dsLister.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return controllerref.Selecting(all, func(o *appsv1.DaemonSet) *metav1.LabelSelector { return o.Spec.Selector }, pod.Labels)
}

func (dc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		dc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ds := dc.resolve(pod.Namespace, ref); ds != nil {
			key, _ := keyqueue.Key(ds)
			dc.exp.CreationObserved(key)
			dc.queue.Add(key)
		}
		return
	}
	for _, ds := range dc.matching(pod) {
		dc.enqueue(ds)
	}
}

func (dc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		dc.deletePod(curPod)
		return
	}
	controllerref.Updated(oldPod, curPod, dc.resolve, dc.matching, dc.enqueue)
}

func (dc *Controller) deletePod(obj any) {
	pod, ok := controllerref.Deleted[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	ds := dc.resolve(pod.Namespace, ref)
	if ds == nil {
		return
	}
	key, _ := keyqueue.Key(ds)
	dc.exp.DeletionObserved(key, expectations.PodKey(pod.Namespace, pod.Name))
	dc.queue.Add(key)
}
