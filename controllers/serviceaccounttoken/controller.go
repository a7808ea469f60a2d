// Package serviceaccounttoken deletes the Secrets of type
// kubernetes.io/service-account-token whose service account is gone, as
// Kubernetes' tokens controller does: a token Secret lives no longer
// than its account. The API server fills such Secrets in when they are
// written (it holds the signing key); their tokens already stop working
// once the account is gone, and this controller removes what is left.
package serviceaccounttoken

import (
	"context"
	"fmt"
	"log/slog"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in --controllers and logs.
const Name = "serviceaccount-token"

// byAccount indexes token Secrets by "namespace/account".
const byAccount = "serviceaccount"

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller deletes token Secrets of missing service accounts.
type Controller struct {
	client   kubernetes.Interface
	accounts corelisters.ServiceAccountLister
	// secrets watches token Secrets only: the controller has no use for
	// the others, which would all sit in its cache. It is its own
	// informer, not the shared factory's Secret informer, which would
	// then be filtered for every controller.
	secrets cache.SharedIndexInformer
	queue   clusterutil.Queue
	log     *slog.Logger
}

// New builds the controller on c's informers.
func New(c *controllers.Context) (*Controller, error) {
	saInf := c.Informers.Core().V1().ServiceAccounts()
	secrets := coreinformers.NewFilteredSecretInformer(c.Client, metav1.NamespaceAll, 0,
		cache.Indexers{byAccount: accountIndex}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
		})
	ctl := &Controller{
		client: c.Client, accounts: saInf.Lister(), secrets: secrets,
		queue: clusterutil.NewQueue(Name, c.Clock), log: c.Logger.With("controller", Name),
	}
	if _, err := secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { ctl.enqueue(obj) },
		UpdateFunc: func(_, obj any) { ctl.enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("serviceaccounttoken: %w", err)
	}
	// A deleted account's Secrets are looked at again.
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			sa, ok := clusterutil.Untombstone(obj).(*corev1.ServiceAccount)
			if !ok {
				return
			}
			owned, _ := secrets.GetIndexer().ByIndex(byAccount, sa.Namespace+"/"+sa.Name)
			for _, s := range owned {
				ctl.enqueue(s)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("serviceaccounttoken: %w", err)
	}
	return ctl, nil
}

func accountIndex(obj any) ([]string, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Annotations[corev1.ServiceAccountNameKey] == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + s.Annotations[corev1.ServiceAccountNameKey]}, nil
}

func (c *Controller) enqueue(obj any) {
	if key, ok := clusterutil.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// Run watches token Secrets and syncs them until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	go c.secrets.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.secrets.HasSynced) {
		return
	}
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

// sync deletes the Secret key names if its service account is gone:
// missing, or another account of the same name than the one the Secret
// was filled in for.
func (c *Controller) sync(ctx context.Context, key string) error {
	obj, exists, err := c.secrets.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	secret := obj.(*corev1.Secret)
	if secret.DeletionTimestamp != nil {
		return nil
	}
	name, uid := secret.Annotations[corev1.ServiceAccountNameKey], secret.Annotations[corev1.ServiceAccountUIDKey]
	if name == "" {
		return nil
	}
	owns := func(sa *corev1.ServiceAccount) bool { return uid == "" || string(sa.UID) == uid }
	if sa, err := c.accounts.ServiceAccounts(secret.Namespace).Get(name); err == nil && owns(sa) {
		return nil
	}
	// The cache may lag an account just created: only the API's answer
	// is worth a deletion.
	sa, err := c.client.CoreV1().ServiceAccounts(secret.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && owns(sa):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	err = c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &secret.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("serviceaccounttoken: deleting %s: %w", key, err)
	}
	c.log.Info("deleted the token Secret of a service account that is gone", "secret", key, "serviceaccount", name)
	return nil
}
