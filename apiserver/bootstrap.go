package apiserver

import (
	"context"
	"time"

	"cairn/apiserver/authz"
	"cairn/apiserver/registry/scheduling"
	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// systemNamespaces exist in every cluster, as in Kubernetes.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// ensureSystemObjects creates the system namespaces and the built-in
// priority classes if they are missing, then keeps the kubernetes service
// until ctx ends; meanwhile it creates the default roles and bindings if
// they are missing, which the kubernetes service does not wait for.
// Every API server does it; creation is idempotent.
func (s *Server) ensureSystemObjects(ctx context.Context) {
	var objs []runtime.Object
	for _, name := range systemNamespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, pc := range scheduling.SystemClasses() {
		objs = append(objs, pc)
	}
	s.createAllIfMissing(ctx, objs)
	var rbac []runtime.Object
	for _, cr := range authz.DefaultClusterRoles() {
		rbac = append(rbac, cr)
	}
	for _, crb := range authz.DefaultClusterRoleBindings() {
		rbac = append(rbac, crb)
	}
	go func() {
		s.createAllIfMissing(ctx, rbac)
		s.rbac.awaitDefaults(ctx)
	}()
	s.maintainServices(ctx)
}

// createAllIfMissing creates each of objs that is missing, retrying
// until it is there or ctx ends.
func (s *Server) createAllIfMissing(ctx context.Context, objs []runtime.Object) {
	for _, obj := range objs {
		h, ok := s.handlerFor(obj)
		if !ok {
			continue
		}
		for ctx.Err() == nil {
			err := s.createIfMissing(ctx, h, obj)
			if err == nil {
				break
			}
			s.log.Debug("creating a system object failed; retrying", "resource", h.res.GVR.Resource, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// handlerFor returns the handler of a cluster-scoped object's resource.
func (s *Server) handlerFor(obj runtime.Object) (*restHandler, bool) {
	gvks, _, err := apiScheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, false
	}
	for _, h := range s.handlers {
		if h.res.GVK() == gvks[0] {
			return h, true
		}
	}
	return nil, false
}

// createIfMissing creates the cluster-scoped object obj unless one of its
// name exists.
func (s *Server) createIfMissing(ctx context.Context, h *restHandler, obj runtime.Object) error {
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	name := m.GetName()
	if _, err := h.store.Get(ctx, h.key("", name), storage.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	obj = obj.DeepCopyObject()
	if err := beforeCreate(obj, "", h.res, time.Now()); err != nil {
		return err
	}
	h.res.Strategy.Default(obj)
	h.res.Strategy.PrepareForCreate(ctx, obj)
	if _, err := h.store.Create(ctx, h.key("", name), obj, 0); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
