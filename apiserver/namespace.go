package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"cairn/apiserver/registry/core"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Namespace lifecycle, as Kubernetes has it: a DELETE marks a namespace
// Terminating; the namespace controller then empties it and removes its
// "kubernetes" finalizer through namespaces/finalize; the namespace goes
// once spec.finalizers and metadata.finalizers are both empty. Nothing can
// be created in a Terminating namespace meanwhile.

var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

// immortalNamespaces cannot be deleted: the cluster's own objects live in
// them. Kubernetes protects default, kube-system and kube-public; Cairn
// also keeps kube-node-lease, where node heartbeats live.
func immortalNamespaces() []string { return systemNamespaces }

// deletable refuses to delete a system namespace, with Kubernetes' 403.
func (h *restHandler) deletable(name string) error {
	if h.res.GVR == namespacesResource && slices.Contains(immortalNamespaces(), name) {
		return apierrors.NewForbidden(h.res.GVR.GroupResource(), name, fmt.Errorf("this namespace may not be deleted"))
	}
	return nil
}

// specFinalized reports whether obj has no finalizers left in its spec;
// only namespaces have them.
func specFinalized(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return !ok || len(ns.Spec.Finalizers) == 0
}

// markTerminating moves a namespace marked for deletion to the
// Terminating phase, which the namespace controller acts on.
func markTerminating(obj runtime.Object) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
}

// namespaceAdmits refuses to create obj, a namespaced object, in a
// namespace that does not exist (404) or is being deleted (403 with the
// NamespaceTerminating cause that controllers look for), as Kubernetes'
// NamespaceLifecycle admission does.
func (h *restHandler) namespaceAdmits(ctx context.Context, obj metav1.Object) error {
	nsh, ok := h.s.handlers[namespacesResource]
	if !ok || !h.res.Namespaced {
		return nil
	}
	name := obj.GetNamespace()
	got, err := nsh.getCached(ctx, "", name)
	if err != nil {
		return err
	}
	ns, ok := got.(*corev1.Namespace)
	if !ok || (ns.Status.Phase != corev1.NamespaceTerminating && ns.DeletionTimestamp == nil) {
		return nil
	}
	forbidden := apierrors.NewForbidden(h.res.GVR.GroupResource(), obj.GetName(),
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", name))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", name),
		Field:   "metadata.namespace",
	})
	return forbidden
}

// serveFinalize serves PUT namespaces/NAME/finalize, which replaces
// spec.finalizers (the status stays); the namespace goes at once if it is
// Terminating and no finalizer is left.
func serveFinalize(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Verb != "update" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" finalize")
	}
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	obj := h.res.New()
	if err := decodeBody(r, body, obj, strictFields(r)); err != nil {
		return err
	}
	res := *h.res
	res.Strategy = core.NamespaceFinalizeStrategy()
	fh := *h
	fh.res = &res
	out, _, err := fh.updateWith(r.Context(), r, info, false, func(runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusOK, out)
}
