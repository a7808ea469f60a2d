package apiserver

import (
	"context"
	"slices"
	"strconv"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// members are the cluster IPs and node ports (as their allocation keys
// name them) that one step of an update allocated.
type members struct {
	ips, ports []string
}

// allocateUpdate gives svc, about to replace old, the cluster IP and node
// ports it needs and old does not hold: a cluster IP when it turns from
// ExternalName into a type with one, node ports for ports that have none
// or ask for one old does not hold (and a health check node port when it
// becomes a load balancer with the Local policy). What old holds and svc
// keeps stays allocated; what svc drops is released by releaseDropped
// once the update is stored. A dry run only checks, as on create. On
// error nothing stays allocated.
func (a *serviceAllocator) allocateUpdate(ctx context.Context, svc, old *corev1.Service, dry bool) (members, error) {
	o := owner{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, Since: time.Now().UTC().Truncate(time.Second)}
	var got members
	giveBack := func() {
		if !dry {
			a.releaseMembers(context.WithoutCancel(ctx), svc, got.ips, got.ports)
		}
	}
	if hasClusterIP(svc) && len(heldIPs(old)) == 0 {
		if err := a.checkFamilies(svc); err != nil {
			return members{}, err
		}
		ip, err := a.allocateIP(ctx, svc, o, dry)
		if err != nil {
			return members{}, err
		}
		got.ips = append(got.ips, ip)
		svc.Spec.ClusterIP = ip
		svc.Spec.ClusterIPs = []string{ip}
		svc.Spec.IPFamilies = []corev1.IPFamily{a.family}
	}
	held := map[int32]bool{}
	for _, p := range heldNodePorts(old) {
		held[p] = true
	}
	for _, p := range wantedNodePorts(svc) {
		if *p.port != 0 && held[*p.port] {
			continue
		}
		port, err := a.allocatePort(ctx, *p.port, o, dry, p.path)
		if err != nil {
			giveBack()
			return members{}, err
		}
		got.ports = append(got.ports, port)
		n, _ := strconv.Atoi(port)
		*p.port = int32(n)
		for _, f := range p.sharedWith {
			*f = int32(n)
		}
	}
	return got, nil
}

// releaseDropped gives back what old held and svc, its stored successor,
// no longer does.
func (a *serviceAllocator) releaseDropped(ctx context.Context, old, svc *corev1.Service) {
	var dropped members
	for _, ip := range heldIPs(old) {
		if !holdsIP(svc, ip) {
			dropped.ips = append(dropped.ips, ip)
		}
	}
	for _, p := range heldNodePorts(old) {
		if member := strconv.Itoa(int(p)); !holdsNodePort(svc, member) {
			dropped.ports = append(dropped.ports, member)
		}
	}
	a.releaseUnheld(ctx, svc, dropped)
}

// releaseUnheld releases those of m that the stored svc does not hold:
// another update of the same service may have stored them meanwhile (its
// claim of a member the service holds already succeeds), and they must
// not be freed under it.
func (a *serviceAllocator) releaseUnheld(ctx context.Context, svc *corev1.Service, m members) {
	if len(m.ips) == 0 && len(m.ports) == 0 {
		return
	}
	obj, err := a.services.Get(ctx, a.services.Key(svc.Namespace, svc.Name), storage.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		a.log.Warn("reading a service to release what it dropped failed; the orphan collector will free it",
			"service", svc.Namespace+"/"+svc.Name, "err", err)
		return
	}
	if stored, ok := obj.(*corev1.Service); ok && err == nil && stored.UID == svc.UID {
		m.ips = slices.DeleteFunc(m.ips, func(ip string) bool { return holdsIP(stored, ip) })
		m.ports = slices.DeleteFunc(m.ports, func(p string) bool { return holdsNodePort(stored, p) })
	}
	a.releaseMembers(ctx, svc, m.ips, m.ports)
}

// hasClusterIP reports whether svc gets a cluster IP: every type but
// ExternalName, unless it is headless.
func hasClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// heldIPs are the cluster IPs svc holds, as their keys name them.
func heldIPs(svc *corev1.Service) []string {
	var out []string
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && ip != "" {
			out = append(out, canonicalIP(ip))
		}
	}
	return out
}

// heldNodePorts are the node ports svc holds, the health check one
// included, each once.
func heldNodePorts(svc *corev1.Service) []int32 {
	var out []int32
	seen := map[int32]bool{}
	add := func(p int32) {
		if p != 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range svc.Spec.Ports {
		add(p.NodePort)
	}
	add(svc.Spec.HealthCheckNodePort)
	return out
}
