// Package serviceaccount keeps a "default" ServiceAccount in every active
// namespace, as Kubernetes' service account controller does, so pods that
// name no service account can be admitted.
package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in --controllers and logs.
const Name = "serviceaccount"

// DefaultName is the service account every namespace gets.
const DefaultName = "default"

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller creates missing default service accounts.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	queue      clusterutil.Queue
	log        *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context) (*Controller, error) {
	nsInf := c.Informers.Core().V1().Namespaces()
	saInf := c.Informers.Core().V1().ServiceAccounts()
	ctl := &Controller{
		client: c.Client, namespaces: nsInf.Lister(), accounts: saInf.Lister(),
		queue: clusterutil.NewQueue(Name, c.Clock), log: c.Logger.With("controller", Name),
	}
	if err := clusterutil.QueueNamespaces(nsInf, ctl.queue); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	// A deleted default account is recreated; other accounts do not matter.
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if sa, ok := clusterutil.Untombstone(obj).(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
				ctl.queue.Add(sa.Namespace)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	return ctl, nil
}

// Run syncs namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	if active, err := clusterutil.ActiveNamespace(c.namespaces, name); !active || err != nil {
		return err
	}
	if _, err := c.accounts.ServiceAccounts(name).Get(DefaultName); err == nil {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: name}}
	_, err := c.client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.log.Debug("created the default service account", "namespace", name)
		return nil
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), apierrors.IsNotFound(err):
		// Someone was faster, or the namespace is going away.
		return nil
	default:
		return fmt.Errorf("serviceaccount: creating %s/%s: %w", name, DefaultName, err)
	}
}
