package apiserver

import (
	"net/http"

	"cairn/apiserver/storage"
	"cairn/internal/fence"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withFence reads the request's fence header, if any, into the context
// that its writes run under; storage then makes each write conditional on
// that leadership still holding. A client can only restrict itself with
// it, so no extra permission is needed.
func withFence(r *http.Request) (*http.Request, error) {
	v := r.Header.Get(fence.Header)
	if v == "" {
		return r, nil
	}
	f, err := fence.Parse(v)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	ctx := storage.WithFence(r.Context(), storage.Fence{Key: f.StoreKey(), Token: f.Token})
	return r.WithContext(ctx), nil
}

// leaseFence records, with every write of a Lease, its holder as the
// token of the lease's fence, so a component elected through that Lease
// can fence its writes on it.
func leaseFence(obj runtime.Object) (key, token string, ok bool) {
	l, isLease := obj.(*coordinationv1.Lease)
	if !isLease {
		return "", "", false
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	var transitions int32
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	f := fence.Lease(l.Namespace, l.Name, holder, transitions)
	return f.StoreKey(), f.Token, true
}

// fenceOf returns the fence side-write of a resource's objects, if its
// objects carry one.
func fenceOf(gvr schema.GroupVersionResource) func(runtime.Object) (string, string, bool) {
	if gvr == coordinationv1.SchemeGroupVersion.WithResource("leases") {
		return leaseFence
	}
	return nil
}
