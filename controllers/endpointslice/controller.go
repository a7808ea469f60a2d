// Package endpointslice keeps the EndpointSlices of every Service that has
// a selector, as Kubernetes' EndpointSlice controller does: one endpoint
// per ready, unready or terminating pod with an IP, with its conditions,
// node, zone and target reference, in slices of bounded size labelled
// with the service's name and owned by the service. Services without a
// selector (the API server's own "kubernetes" Service among them) are
// left to whoever manages them.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"
	"cairn/controllers/internal/svcendpoints"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Name is the controller's name in --controllers and logs.
const Name = "endpointslice"

// ControllerName is the value of the managed-by label on the slices this
// controller owns; slices managed by anyone else are never touched.
const ControllerName = "endpointslice-controller.k8s.io"

// DefaultMaxEndpointsPerSlice is Kubernetes' default slice size.
const DefaultMaxEndpointsPerSlice = 100

// errStale makes a sync that read an informer behind this controller's
// own writes retry later.
var errStale = errors.New("endpointslice: the slice cache is behind this controller's writes")

// Config tunes the controller; zero values take the defaults.
type Config struct {
	// MaxEndpointsPerSlice bounds the endpoints of one slice (100).
	MaxEndpointsPerSlice int
}

// Descriptor registers the controller with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c, cfg)
	}}
}

// Controller reconciles Services into EndpointSlices.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	queue    clusterutil.Queue
	tracker  *tracker
	recorder record.EventRecorder
	max      int
	log      *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	if cfg.MaxEndpointsPerSlice <= 0 {
		cfg.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	sliceInf := c.Informers.Discovery().V1().EndpointSlices()
	ctl := &Controller{
		client: c.Client, services: svcInf.Lister(), pods: podInf.Lister(), nodes: nodeInf.Lister(),
		slices: sliceInf.Lister(), queue: clusterutil.NewQueue(Name, c.Clock), tracker: newTracker(),
		recorder: c.Recorder("endpoint-slice-controller"), max: cfg.MaxEndpointsPerSlice,
		log: c.Logger.With("controller", Name),
	}
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{svcInf.Informer(), clusterutil.Enqueue(ctl.queue)},
		{podInf.Informer(), svcendpoints.PodHandlers(ctl.queue, ctl.services)},
		{sliceInf.Informer(), ctl.sliceHandlers()},
		{nodeInf.Informer(), ctl.nodeHandlers()},
	} {
		if _, err := reg.inf.AddEventHandler(reg.h); err != nil {
			return nil, fmt.Errorf("endpointslice: %w", err)
		}
	}
	return ctl, nil
}

// sliceHandlers resync a service when one of its slices is changed or
// deleted by someone else; echoes of the controller's own writes are
// ignored.
func (c *Controller) sliceHandlers() cache.ResourceEventHandlerFuncs {
	enqueue := func(s *discoveryv1.EndpointSlice) {
		if s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
			return
		}
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			c.queue.Add(s.Namespace + "/" + svc)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s, ok := obj.(*discoveryv1.EndpointSlice); ok && !c.tracker.echo(s) {
				enqueue(s)
			}
		},
		UpdateFunc: func(_, obj any) {
			if s, ok := obj.(*discoveryv1.EndpointSlice); ok && !c.tracker.echo(s) {
				enqueue(s)
			}
		},
		DeleteFunc: func(obj any) {
			if s, ok := clusterutil.Untombstone(obj).(*discoveryv1.EndpointSlice); ok && !c.tracker.gone(s) {
				enqueue(s)
			}
		},
	}
}

// nodeHandlers resync every service when a node appears or changes zone,
// since endpoints carry their node's zone. Both are rare.
func (c *Controller) nodeHandlers() cache.ResourceEventHandlerFuncs {
	all := func() {
		svcs, err := c.services.List(labels.Everything())
		if err != nil {
			return
		}
		for _, svc := range svcs {
			if svcendpoints.Selected(svc) {
				c.queue.Add(svc.Namespace + "/" + svc.Name)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { all() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
				all()
			}
		},
	}
}

// Run syncs services until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName,
	}))
	if err != nil {
		return err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !svcendpoints.Selected(svc)) {
		// The garbage collector removes a deleted service's slices too;
		// doing it here keeps a cluster without one clean, and a service
		// that lost its selector keeps no stale endpoints.
		for _, s := range existing {
			c.deleteSlice(ctx, key, s)
		}
		if err != nil {
			c.tracker.forget(key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.DeletionTimestamp != nil {
		return nil
	}
	if c.tracker.stale(key, existing) {
		return errStale
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	// Slices the service does not own (left behind by an earlier service
	// of the same name) are rebuilt and adopted rather than trusted.
	r := &reconciler{svc: svc, max: c.max}
	p := r.plan(existing, desiredGroups(svc, pods, c.nodes))
	return c.apply(ctx, key, svc, p)
}

// apply writes a plan: creations first, then updates, then deletions, so
// that endpoints moving between slices are never missing from all.
func (c *Controller) apply(ctx context.Context, key string, svc *corev1.Service, p plan) error {
	api := c.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	var errs []error
	for _, s := range p.creates {
		got, err := api.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			errs = append(errs, err)
			continue
		}
		c.tracker.wrote(key, got)
	}
	for _, s := range p.updates {
		got, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.tracker.wrote(key, got)
	}
	for _, s := range p.deletes {
		if err := c.deleteSlice(ctx, key, s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		err := errors.Join(errs...)
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s: %v", key, err)
		return fmt.Errorf("endpointslice: service %s: %w", key, err)
	}
	if n := len(p.creates) + len(p.updates) + len(p.deletes); n > 0 {
		c.log.Debug("synced slices", "service", key, "created", len(p.creates), "updated", len(p.updates), "deleted", len(p.deletes))
	}
	return nil
}

func (c *Controller) deleteSlice(ctx context.Context, key string, s *discoveryv1.EndpointSlice) error {
	err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{
		Preconditions: metav1.NewUIDPreconditions(string(s.UID)),
	})
	if apierrors.IsNotFound(err) {
		return nil // gone already; its delete event settles the tracker
	}
	if err != nil {
		return err
	}
	c.tracker.removed(key, s)
	return nil
}
