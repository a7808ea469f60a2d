package apiserver

import (
	"fmt"
	"net/http"
	"time"

	"cairn/apiserver/registry/core"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// bindingsResource names the legacy namespaced "bindings" resource in
// errors; POST /api/v1/namespaces/{ns}/bindings binds the pod the body
// names, as pods/{name}/binding does.
var bindingsResource = schema.GroupResource{Resource: "bindings"}

// serveBinding serves POST pods/{name}/binding, the scheduler's way of
// assigning a pod to a node.
func serveBinding(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Verb != "create" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" binding")
	}
	b, err := h.readBinding(r, info.Namespace)
	if err != nil {
		return err
	}
	if b.Name != info.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if err := h.bind(r, b); err != nil {
		return err
	}
	return h.respondSuccess(w, r)
}

// serveBindings serves POST /api/v1/namespaces/{ns}/bindings, which older
// schedulers use: the pod is the one the Binding is named after.
func (s *Server) serveBindings(w http.ResponseWriter, r *http.Request, info requestInfo) {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("pods")]
	var err error
	switch {
	case !ok:
		err = apierrors.NewNotFound(bindingsResource, "")
	case info.Verb != "create" || info.Name != "" || info.Namespace == "":
		err = apierrors.NewMethodNotSupported(bindingsResource, info.Verb)
	default:
		err = h.serveLegacyBinding(w, r, info)
	}
	if err != nil {
		writeError(w, err)
	}
}

func (h *restHandler) serveLegacyBinding(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	b, err := h.readBinding(r, info.Namespace)
	if err != nil {
		return err
	}
	if err := h.bind(r, b); err != nil {
		return err
	}
	return h.respondSuccess(w, r)
}

// readBinding decodes and validates a Binding posted in namespace.
func (h *restHandler) readBinding(r *http.Request, namespace string) (*corev1.Binding, error) {
	body, err := h.readBody(r)
	if err != nil {
		return nil, err
	}
	b := &corev1.Binding{}
	if err := decodeBody(r, body, b, strictFields(r)); err != nil {
		return nil, err
	}
	switch b.Namespace {
	case "":
		b.Namespace = namespace
	case namespace:
	default:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if b.Name == "" {
		return nil, apierrors.NewBadRequest("name is required in the Binding object")
	}
	if errs := core.ValidateBinding(b); len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), b.Name, errs)
	}
	return b, nil
}

// bind sets the pod's node and its PodScheduled condition in one
// compare-and-swap write. It bypasses the pod strategy on purpose: that
// strategy keeps status out of spec updates and forbids changing
// spec.nodeName, and binding is the one write allowed to do both.
// Binding an already bound pod is a 409 Conflict.
func (h *restHandler) bind(r *http.Request, b *corev1.Binding) error {
	_, err := h.store.GuaranteedUpdate(r.Context(), h.key(b.Namespace, b.Name), nil, func(current runtime.Object) (runtime.Object, error) {
		pod, ok := current.(*corev1.Pod)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("apiserver: binding a %T", current))
		}
		if err := core.BindPod(pod, b, metav1.NewTime(time.Now().Truncate(time.Second))); err != nil {
			return nil, err
		}
		if dryRun(r) {
			return nil, errDryRun
		}
		return pod, nil
	}, false)
	if err == errDryRun {
		return nil
	}
	return err
}
