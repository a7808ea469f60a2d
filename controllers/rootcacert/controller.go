// Package rootcacert publishes the cluster CA in every namespace as the
// ConfigMap "kube-root-ca.crt" (key ca.crt), as Kubernetes' root CA
// certificate publisher does: pods' service account volumes project it,
// so that in-cluster clients trust the API server.
package rootcacert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in --controllers and logs.
const Name = "root-ca-cert-publisher"

// ConfigMapName is the ConfigMap every namespace gets, and DataKey its key.
const (
	ConfigMapName = "kube-root-ca.crt"
	DataKey       = "ca.crt"
	description   = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		ca, err := caOf(c.Config)
		if err != nil {
			return nil, err
		}
		return New(c, ca)
	}}
}

// caOf is the CA the controller manager trusts the API server with, which
// is the cluster CA.
func caOf(cfg *rest.Config) ([]byte, error) {
	if cfg == nil {
		return nil, errors.New("rootcacert: no client config to take the cluster CA from")
	}
	if len(cfg.TLSClientConfig.CAData) > 0 {
		return cfg.TLSClientConfig.CAData, nil
	}
	if cfg.TLSClientConfig.CAFile != "" {
		b, err := os.ReadFile(cfg.TLSClientConfig.CAFile)
		if err != nil {
			return nil, fmt.Errorf("rootcacert: reading the cluster CA: %w", err)
		}
		return b, nil
	}
	return nil, errors.New("rootcacert: the controller manager's kubeconfig names no certificate authority to publish")
}

// Controller keeps the ConfigMap in every active namespace.
type Controller struct {
	client     kubernetes.Interface
	ca         []byte
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	queue      clusterutil.Queue
	log        *slog.Logger
}

// New builds the controller on c's informers; ca is the PEM to publish.
func New(c *controllers.Context, ca []byte) (*Controller, error) {
	nsInf := c.Informers.Core().V1().Namespaces()
	cmInf := c.Informers.Core().V1().ConfigMaps()
	ctl := &Controller{
		client: c.Client, ca: ca, namespaces: nsInf.Lister(), configMaps: cmInf.Lister(),
		queue: clusterutil.NewQueue(Name, c.Clock), log: c.Logger.With("controller", Name),
	}
	if err := clusterutil.QueueNamespaces(nsInf, ctl.queue); err != nil {
		return nil, fmt.Errorf("rootcacert: %w", err)
	}
	// An edited or deleted ConfigMap is put back.
	enqueueCM := func(obj any) {
		if cm, ok := clusterutil.Untombstone(obj).(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
			ctl.queue.Add(cm.Namespace)
		}
	}
	if _, err := cmInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { enqueueCM(obj) },
		DeleteFunc: enqueueCM,
	}); err != nil {
		return nil, fmt.Errorf("rootcacert: %w", err)
	}
	return ctl, nil
}

// Run syncs namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, namespace string) error {
	if active, err := clusterutil.ActiveNamespace(c.namespaces, namespace); !active || err != nil {
		return err
	}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: namespace, Annotations: map[string]string{"kubernetes.io/description": description}},
			Data:       map[string]string{DataKey: string(c.ca)},
		}
		_, err = c.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("rootcacert: creating %s/%s: %w", namespace, ConfigMapName, err)
		}
		c.log.Debug("published the cluster CA", "namespace", namespace)
		return nil
	case err != nil:
		return err
	}
	if bytes.Equal([]byte(cm.Data[DataKey]), c.ca) && len(cm.Data) == 1 && len(cm.BinaryData) == 0 {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data, cm.BinaryData = map[string]string{DataKey: string(c.ca)}, nil
	if _, err := c.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("rootcacert: updating %s/%s: %w", namespace, ConfigMapName, err)
	}
	return nil
}
