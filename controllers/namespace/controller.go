// Package namespace empties namespaces being deleted, as Kubernetes'
// namespace controller does: once the API server marks a namespace
// Terminating, every namespaced object in it is deleted, and when none
// is left the "kubernetes" finalizer is removed through the finalize
// subresource, which lets the API server delete the namespace. Progress
// and problems are reported as namespace conditions.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "namespace"

// Config tunes the controller; zero values take the defaults.
type Config struct {
	// RecheckPeriod is how long to wait before looking again at a
	// namespace whose content is still going away (pods in their grace
	// period, objects held by finalizers): 5s.
	RecheckPeriod time.Duration
}

// Descriptor registers the controller with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c, cfg)
	}}
}

// Controller is the namespace controller.
type Controller struct {
	client     kubernetes.Interface
	metadata   metadata.Interface
	discovery  discovery.DiscoveryInterface
	namespaces corelisters.NamespaceLister
	queue      clusterutil.Queue
	clock      clock.WithTicker
	log        *slog.Logger
	recheck    time.Duration
}

// New builds the controller; it needs c.Config to reach every resource
// through discovery and the metadata client.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	if c.Config == nil {
		return nil, errors.New("namespace: the controller needs a client configuration")
	}
	mc, err := metadata.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	if cfg.RecheckPeriod <= 0 {
		cfg.RecheckPeriod = 5 * time.Second
	}
	inf := c.Informers.Core().V1().Namespaces()
	ctl := &Controller{
		client: c.Client, metadata: mc, discovery: dc, namespaces: inf.Lister(),
		queue: clusterutil.NewQueue(Name, c.Clock), clock: c.Clock, log: c.Logger.With("controller", Name),
		recheck: cfg.RecheckPeriod,
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			ctl.queue.Add(ns.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	return ctl, nil
}

// Run empties terminating namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp == nil || !hasFinalizer(cached) {
		return nil
	}
	// Act on the namespace as stored: it may already be finalized.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns) {
		return nil
	}
	res := c.deleteContent(ctx, name)
	if ns, err = c.writeConditions(ctx, ns, res); err != nil {
		return err
	}
	if res.failed() {
		return fmt.Errorf("namespace: emptying %s: %w", name, errors.Join(append(res.discoveryErrs, res.deleteErrs...)...))
	}
	if res.remaining() {
		c.queue.AddAfter(name, max(c.recheck, res.estimate))
		return nil
	}
	return c.finalize(ctx, ns)
}

// finalize removes the controller's finalizer; the API server deletes
// the namespace when no finalizer is left.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	cp := ns.DeepCopy()
	var kept []corev1.FinalizerName
	for _, f := range cp.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	cp.Spec.Finalizers = kept
	_, err := c.client.CoreV1().Namespaces().Finalize(ctx, cp, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace: finalizing %s: %w", ns.Name, err)
	}
	c.log.Info("namespace emptied", "namespace", ns.Name)
	return nil
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}
