package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// admit runs what creating obj needs beyond its strategy and must reach
// the store: a service gets its cluster IP and node ports. It runs after
// validation, so nothing is allocated for an invalid object; undo gives
// the allocations back when the create then fails.
func (h *restHandler) admit(ctx context.Context, obj runtime.Object, dry bool) (undo func(createErr error), err error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || h.s.services == nil {
		return func(error) {}, nil
	}
	return h.s.services.allocate(ctx, svc, dry)
}

// afterDelete runs once obj is gone from the store (err is the delete's
// result): a service's cluster IP and node ports are released, even when
// the client has hung up meanwhile.
func (h *restHandler) afterDelete(ctx context.Context, obj runtime.Object, err error) {
	svc, ok := obj.(*corev1.Service)
	if err != nil || !ok || h.s.services == nil {
		return
	}
	h.s.services.release(context.WithoutCancel(ctx), svc)
}

// newServiceAllocator builds the allocator of cluster IPs and node ports
// over the services' store; nil when services are not served.
func (s *Server) newServiceAllocator() (*serviceAllocator, error) {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("services")]
	if !ok {
		return nil, nil
	}
	return newServiceAllocator(s.cfg, h.store, s.log)
}
