// Package endpoints keeps the legacy core/v1 Endpoints object of every
// Service that has a selector, as Kubernetes' endpoints controller does:
// ready pods in addresses, unready ones in notReadyAddresses, grouped in
// subsets by the ports they serve. Services without a selector keep the
// Endpoints their owner writes.
package endpoints

import (
	"context"
	"fmt"
	"log/slog"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"
	"cairn/controllers/internal/svcendpoints"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in --controllers and logs.
const Name = "endpoint"

// annotationLeader marks Endpoints used as leader-election locks by old
// components; they have no Service and must not be deleted.
const annotationLeader = "control-plane.alpha.kubernetes.io/leader"

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller reconciles Services into Endpoints.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	queue     clusterutil.Queue
	log       *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context) (*Controller, error) {
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	epInf := c.Informers.Core().V1().Endpoints()
	ctl := &Controller{
		client: c.Client, services: svcInf.Lister(), pods: podInf.Lister(), endpoints: epInf.Lister(),
		queue: clusterutil.NewQueue(Name, c.Clock), log: c.Logger.With("controller", Name),
	}
	if _, err := svcInf.Informer().AddEventHandler(clusterutil.Enqueue(ctl.queue)); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(svcendpoints.PodHandlers(ctl.queue, ctl.services)); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	// A deleted Endpoints object of a live service is written again.
	if _, err := epInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if key, ok := clusterutil.KeyOf(obj); ok {
				ctl.queue.Add(key)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	return ctl, nil
}

// Run syncs services until ctx ends. It first queues every Endpoints
// object, so that those of services deleted while no controller ran are
// removed.
func (c *Controller) Run(ctx context.Context, workers int) {
	if eps, err := c.endpoints.List(labels.Everything()); err == nil {
		for _, ep := range eps {
			if _, ok := ep.Annotations[annotationLeader]; !ok {
				c.queue.Add(ep.Namespace + "/" + ep.Name)
			}
		}
	}
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if _, err := c.endpoints.Endpoints(ns).Get(name); err != nil {
			return nil
		}
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("endpoints: deleting %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !svcendpoints.Selected(svc) || svc.DeletionTimestamp != nil {
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets := desiredSubsets(svc, pods)
	truncated := truncate(subsets)

	current, err := c.endpoints.Endpoints(ns).Get(name)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	want := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if !create {
		want = current.DeepCopy()
	}
	want.Labels = endpointsLabels(svc)
	if truncated {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[AnnotationOverCapacity] = "truncated"
	} else {
		delete(want.Annotations, AnnotationOverCapacity)
	}
	want.Subsets = subsets
	if !create && equality.Semantic.DeepEqual(current.Subsets, want.Subsets) &&
		equality.Semantic.DeepEqual(current.Labels, want.Labels) && equality.Semantic.DeepEqual(current.Annotations, want.Annotations) {
		return nil
	}
	if create {
		_, err = c.client.CoreV1().Endpoints(ns).Create(ctx, want, metav1.CreateOptions{})
	} else {
		_, err = c.client.CoreV1().Endpoints(ns).Update(ctx, want, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		return fmt.Errorf("endpoints: writing %s: %w", key, err)
	}
}

// endpointsLabels are the service's labels, plus the headless mark.
func endpointsLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		out[k] = v
	}
	if svcendpoints.Headless(svc) {
		out[svcendpoints.LabelHeadless] = ""
	} else {
		delete(out, svcendpoints.LabelHeadless)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
