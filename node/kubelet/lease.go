package kubelet

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// leaseLoop renews the node's Lease in kube-node-lease every
// NodeLeaseRenewInterval, the node's heartbeat; a failed renewal is
// retried sooner, with a growing delay.
func (k *Kubelet) leaseLoop(ctx context.Context) {
	retry := 200 * time.Millisecond
	var last *coordinationv1.Lease
	for {
		wait := k.cfg.NodeLeaseRenewInterval
		lease, err := k.renewLease(ctx, last)
		last = lease
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			k.log.Warn("renewing the node lease failed; retrying", "err", err, "in", retry)
			wait, retry = retry, min(2*retry, 7*time.Second)
		} else {
			retry = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// renewLease renews the lease from last, the lease as last stored (one
// round trip), or reads it first when there is none or it changed.
func (k *Kubelet) renewLease(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	k.mu.Lock()
	uid := k.nodeUID
	k.mu.Unlock()
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(k.cfg.NodeName),
		LeaseDurationSeconds: ptr.To(int32(k.cfg.NodeLeaseDuration / time.Second)),
		RenewTime:            &now,
	}
	// Owned by the Node, so the lease goes when the node is deleted.
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: k.cfg.NodeName, UID: types.UID(uid)}}
	if last == nil {
		lease, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			created, err := leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease, OwnerReferences: owner},
				Spec:       spec,
			}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("kubelet: creating the node lease: %w", err)
			}
			return created, nil
		}
		if err != nil {
			return nil, fmt.Errorf("kubelet: reading the node lease: %w", err)
		}
		last = lease
	}
	lease := last.DeepCopy()
	lease.Spec.HolderIdentity = spec.HolderIdentity
	lease.Spec.LeaseDurationSeconds = spec.LeaseDurationSeconds
	lease.Spec.RenewTime = spec.RenewTime
	if uid != "" {
		lease.OwnerReferences = owner
	}
	out, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		// Read it again next time: it changed or is gone.
		return nil, fmt.Errorf("kubelet: renewing the node lease: %w", err)
	}
	return out, nil
}
