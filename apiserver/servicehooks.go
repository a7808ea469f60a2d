package apiserver

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// updateHook allocates, around an update, what the new object needs and
// the stored one does not hold, and releases afterwards what only the
// stored one held: a service's cluster IP and node ports when its type or
// ports change. admit runs in every attempt of the update's
// compare-and-swap loop, after validation; finish runs once, with the
// update's result.
type updateHook struct {
	h   *restHandler
	ctx context.Context
	dry bool
	// old and fresh are the stored service the last attempt replaced and
	// what that attempt allocated for its successor.
	old   *corev1.Service
	fresh members
}

// beginUpdate returns the hook of one update request.
func (h *restHandler) beginUpdate(ctx context.Context, dry bool) *updateHook {
	return &updateHook{h: h, ctx: ctx, dry: dry}
}

// admit allocates for obj, about to replace current. What an earlier
// attempt allocated is given back first: that attempt lost a race and
// this one starts over from a newer stored object.
func (u *updateHook) admit(obj, current runtime.Object) error {
	svc, ok := obj.(*corev1.Service)
	old, isService := current.(*corev1.Service)
	if !ok || !isService || u.h.s.services == nil {
		return nil
	}
	u.giveBack()
	fresh, err := u.h.s.services.allocateUpdate(u.ctx, svc, old, u.dry)
	if err != nil {
		return err
	}
	u.old, u.fresh = old, fresh
	return nil
}

// finish releases what the stored object out no longer holds once the
// update succeeded (err nil), or gives back the last attempt's
// allocations when it surely failed. After a timeout the update may have
// been stored: then nothing is released, and the orphan collector frees
// whatever the stored service does not hold.
func (u *updateHook) finish(out runtime.Object, err error) {
	if u.old == nil || u.dry {
		return
	}
	if err != nil {
		if surelyNotStored(err) {
			u.giveBack()
		}
		return
	}
	if svc, ok := out.(*corev1.Service); ok {
		u.h.s.services.releaseDropped(context.WithoutCancel(u.ctx), u.old, svc)
	}
}

func (u *updateHook) giveBack() {
	if u.old == nil || u.dry {
		return
	}
	u.h.s.services.releaseUnheld(context.WithoutCancel(u.ctx), u.old, u.fresh)
	u.old, u.fresh = nil, members{}
}

// surelyNotStored reports whether a write that failed with err was
// refused rather than cut short: a client error, except for the throttled
// and timed out ones.
func surelyNotStored(err error) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout
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
