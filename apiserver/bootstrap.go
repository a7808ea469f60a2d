package apiserver

import (
	"context"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// systemNamespaces exist in every cluster, as in Kubernetes.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// ensureSystemObjects creates the system namespaces if they are missing,
// then keeps the kubernetes service until ctx ends. Every API server does
// it; creation is idempotent.
func (s *Server) ensureSystemObjects(ctx context.Context) {
	h, ok := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}]
	if !ok {
		return
	}
	for _, name := range systemNamespaces {
		for ctx.Err() == nil {
			err := s.createIfMissing(ctx, h, name)
			if err == nil {
				break
			}
			s.log.Debug("creating a system namespace failed; retrying", "namespace", name, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	s.maintainServices(ctx)
}

func (s *Server) createIfMissing(ctx context.Context, h *restHandler, name string) error {
	_, err := h.store.Get(ctx, h.key("", name), storage.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := beforeCreate(ns, "", h.res, time.Now()); err != nil {
		return err
	}
	h.res.Strategy.Default(ns)
	h.res.Strategy.PrepareForCreate(ctx, ns)
	if _, err := h.store.Create(ctx, h.key("", name), ns, 0); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
