package apiserver

import (
	"context"
	"strconv"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// holdsIP reports whether svc carries the cluster IP member.
func holdsIP(svc *corev1.Service, member string) bool {
	for _, ip := range svc.Spec.ClusterIPs {
		if canonicalIP(ip) == member {
			return true
		}
	}
	return false
}

// holdsNodePort reports whether svc carries the node port member.
func holdsNodePort(svc *corev1.Service, member string) bool {
	for _, p := range svc.Spec.Ports {
		if strconv.Itoa(int(p.NodePort)) == member {
			return true
		}
	}
	return strconv.Itoa(int(svc.Spec.HealthCheckNodePort)) == member
}

// orphaned returns the check an allocator makes of an old allocation: it
// is an orphan when its service is gone, is another service of the same
// name, or no longer carries the member (an update dropped it). The read
// is linearizable: a stale answer could free a member still in use.
func (a *serviceAllocator) orphaned(holds func(*corev1.Service, string) bool) func(ctx context.Context, o owner, member string) (bool, error) {
	return func(ctx context.Context, o owner, member string) (bool, error) {
		obj, err := a.services.Get(ctx, a.services.Key(o.Namespace, o.Name), storage.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return false, nil
		}
		return svc.UID != o.UID || !holds(svc, member), nil
	}
}

// collectOrphans frees the cluster IPs and node ports no service holds:
// those of services whose delete was cut short before the release, or
// whose create was, after the allocation.
func (a *serviceAllocator) collectOrphans(ctx context.Context) {
	for _, al := range []*allocator{a.ips, a.ports} {
		n, err := al.collect(ctx)
		if err != nil {
			a.log.Warn("collecting orphaned allocations failed; will retry", "range", al.r.String(), "err", err)
			continue
		}
		if n > 0 {
			a.log.Info("freed orphaned allocations", "range", al.r.String(), "count", n)
		}
	}
}
