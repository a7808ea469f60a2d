package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Where allocations live in the store: one key per cluster IP or node
// port, beside the objects but under no resource's prefix.
const (
	serviceIPPrefix = "/registry/ipallocations/"
	nodePortPrefix  = "/registry/nodeportallocations/"
)

// serviceAllocator gives services their cluster IP from the service CIDR
// and their node ports, and takes them back when the service goes.
type serviceAllocator struct {
	cidr     *ipRange
	family   corev1.IPFamily
	ips      *allocator
	ports    *allocator
	services *storage.Store
	log      *slog.Logger
}

func newServiceAllocator(cfg Config, services *storage.Store, log *slog.Logger) (*serviceAllocator, error) {
	cidr := cfg.ServiceCIDR
	if cidr == "" {
		cidr = DefaultServiceCIDR
	}
	r, err := parseServiceCIDR(cidr)
	if err != nil {
		return nil, err
	}
	a := &serviceAllocator{cidr: r, family: corev1.IPv4Protocol, services: services, log: log}
	if r.prefix.Addr().Is6() {
		a.family = corev1.IPv6Protocol
	}
	ports := portRange{base: nodePortBase, n: nodePortSize}
	a.ips = &allocator{kv: cfg.Storage.KV, prefix: serviceIPPrefix, r: r, reserved: 1,
		static: max(1, staticBand(r.size(), 16, 256)), grace: allocationGrace, orphaned: a.orphaned(holdsIP)}
	a.ports = &allocator{kv: cfg.Storage.KV, prefix: nodePortPrefix, r: ports,
		static: staticBand(ports.size(), 32, 128), grace: allocationGrace, orphaned: a.orphaned(holdsNodePort)}
	return a, nil
}

// allocate gives svc, about to be created, its cluster IP and node ports:
// the requested ones if they are free and in range, else free ones. A dry
// run only checks, and fills in members that were free at the time.
// undo gives everything back after the create failed.
func (a *serviceAllocator) allocate(ctx context.Context, svc *corev1.Service, dry bool) (undo func(createErr error), err error) {
	o := owner{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, Since: time.Now().UTC().Truncate(time.Second)}
	var ips, ports []string
	giveBack := func() {
		if !dry {
			a.releaseMembers(context.WithoutCancel(ctx), svc, ips, ports)
		}
	}
	if err := a.checkFamilies(svc); err != nil {
		return nil, err
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		ip, err := a.allocateIP(ctx, svc, o, dry)
		if err != nil {
			return nil, err
		}
		ips = append(ips, ip)
		svc.Spec.ClusterIP = ip
		svc.Spec.ClusterIPs = []string{ip}
		svc.Spec.IPFamilies = []corev1.IPFamily{a.family}
	}
	for _, p := range wantedNodePorts(svc) {
		port, err := a.allocatePort(ctx, *p.port, o, dry, p.path)
		if err != nil {
			giveBack()
			return nil, err
		}
		ports = append(ports, port)
		n, _ := strconv.Atoi(port)
		*p.port = int32(n)
		for _, f := range p.sharedWith {
			*f = int32(n)
		}
	}
	return func(createErr error) {
		// Only a create that surely failed gives members back: one that
		// timed out may still have stored the service, and a member
		// released under a stored service would go to a second one.
		if apierrors.IsAlreadyExists(createErr) || apierrors.IsBadRequest(createErr) {
			giveBack()
		}
	}, nil
}

// checkFamilies refuses what a single-stack cluster cannot give. The
// strategy defaults ipFamilies to IPv4 before the allocator runs, so on
// an IPv6 range a lone IPv4 family without a requested IP is taken as
// that default and replaced.
func (a *serviceAllocator) checkFamilies(svc *corev1.Service) error {
	s := &svc.Spec
	if s.Type == corev1.ServiceTypeExternalName || s.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	specPath := field.NewPath("spec")
	if s.IPFamilyPolicy != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		return invalidService(svc, field.Invalid(specPath.Child("ipFamilyPolicy"), *s.IPFamilyPolicy,
			"this cluster is not configured for dual-stack services"))
	}
	if len(s.ClusterIPs) > 1 {
		return invalidService(svc, field.Invalid(specPath.Child("clusterIPs"), s.ClusterIPs,
			"this cluster is not configured for dual-stack services: only one IP may be requested"))
	}
	if len(s.IPFamilies) > 1 {
		return invalidService(svc, field.Invalid(specPath.Child("ipFamilies"), s.IPFamilies,
			"this cluster is not configured for dual-stack services"))
	}
	switch {
	case len(s.IPFamilies) == 0 || s.IPFamilies[0] == a.family:
	case s.IPFamilies[0] == corev1.IPv4Protocol && s.ClusterIP == "":
		s.IPFamilies[0] = a.family // the strategy's default, not the client's choice
	default:
		return invalidService(svc, field.Invalid(specPath.Child("ipFamilies").Index(0), s.IPFamilies[0], "not configured on this cluster"))
	}
	return nil
}

func (a *serviceAllocator) allocateIP(ctx context.Context, svc *corev1.Service, o owner, dry bool) (string, error) {
	want := svc.Spec.ClusterIP
	var err error
	switch {
	case want == "" && dry:
		want, err = a.ips.anyFree(ctx)
	case want == "":
		want, err = a.ips.next(ctx, o)
	case dry:
		err = a.ips.free(ctx, canonicalIP(want))
	default:
		err = a.ips.claim(ctx, canonicalIP(want), o)
	}
	if err == nil {
		return canonicalIP(want), nil
	}
	path := field.NewPath("spec", "clusterIPs")
	switch {
	case errors.Is(err, errAllocated):
		return "", invalidService(svc, field.Invalid(path, []string{want}, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", want)))
	case errors.Is(err, errNotInRange):
		return "", invalidService(svc, field.Invalid(path, []string{want}, fmt.Sprintf(
			"failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", want, want, a.cidr)))
	case errors.Is(err, errRangeFull):
		return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
	}
	return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %v", err))
}

// canonicalIP writes an IP the way its key is named.
func canonicalIP(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.String()
	}
	return ip
}

// nodePortField is a node port to fill in (when 0) or claim.
type nodePortField struct {
	port *int32
	path *field.Path
	// sharedWith are the node ports of the same port number with another
	// protocol, which get the same node port, as Kubernetes gives them.
	sharedWith []*int32
}

// wantedNodePorts lists the node ports svc needs: one per port of a
// NodePort service, and of a LoadBalancer one unless it opted out, plus
// the health check port of a LoadBalancer with the Local traffic policy.
func wantedNodePorts(svc *corev1.Service) []*nodePortField {
	s := &svc.Spec
	lb := s.Type == corev1.ServiceTypeLoadBalancer
	if s.Type != corev1.ServiceTypeNodePort && !lb {
		return nil
	}
	allocateAll := !lb || s.AllocateLoadBalancerNodePorts == nil || *s.AllocateLoadBalancerNodePorts
	var out []*nodePortField
	claimed := map[int32]bool{}
	byPort := map[int32]*nodePortField{}
	for i := range s.Ports {
		p := &s.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		switch {
		case p.NodePort != 0 && claimed[p.NodePort]:
			// The same node port for another protocol.
		case p.NodePort != 0:
			claimed[p.NodePort] = true
			out = append(out, &nodePortField{port: &p.NodePort, path: path})
		case !allocateAll:
		case byPort[p.Port] != nil:
			byPort[p.Port].sharedWith = append(byPort[p.Port].sharedWith, &p.NodePort)
		default:
			f := &nodePortField{port: &p.NodePort, path: path}
			byPort[p.Port] = f
			out = append(out, f)
		}
	}
	if lb && s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		out = append(out, &nodePortField{port: &s.HealthCheckNodePort, path: field.NewPath("spec", "healthCheckNodePort")})
	}
	return out
}

func (a *serviceAllocator) allocatePort(ctx context.Context, want int32, o owner, dry bool, path *field.Path) (string, error) {
	member := strconv.Itoa(int(want))
	var err error
	switch {
	case want == 0 && dry:
		member, err = a.ports.anyFree(ctx)
	case want == 0:
		member, err = a.ports.next(ctx, o)
	case dry:
		err = a.ports.free(ctx, member)
	default:
		err = a.ports.claim(ctx, member, o)
	}
	switch {
	case err == nil:
		return member, nil
	case errors.Is(err, errAllocated):
		return "", apierrors.NewInvalid(serviceKind, o.Name, field.ErrorList{field.Invalid(path, want, "provided port is already allocated")})
	case errors.Is(err, errNotInRange):
		return "", apierrors.NewInvalid(serviceKind, o.Name, field.ErrorList{field.Invalid(path, want,
			fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.ports.r))})
	case errors.Is(err, errRangeFull):
		return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
	}
	return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %v", err))
}

var serviceKind = schema.GroupKind{Kind: "Service"}

func invalidService(svc *corev1.Service, err *field.Error) error {
	return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{err})
}

// release gives back what a deleted service held. Members another
// service has since taken over are left alone.
func (a *serviceAllocator) release(ctx context.Context, svc *corev1.Service) {
	var ports []string
	for _, p := range heldNodePorts(svc) {
		ports = append(ports, strconv.Itoa(int(p)))
	}
	a.releaseMembers(ctx, svc, heldIPs(svc), ports)
}

// releaseMembers frees members; a failure only leaks them until the
// orphan collector finds them, so it is logged, not returned.
func (a *serviceAllocator) releaseMembers(ctx context.Context, svc *corev1.Service, ips, ports []string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, ip := range ips {
		if err := a.ips.release(ctx, ip, svc.UID); err != nil {
			a.log.Warn("releasing a cluster IP failed; the orphan collector will free it", "ip", ip, "service", svc.Namespace+"/"+svc.Name, "err", err)
		}
	}
	for _, p := range ports {
		if err := a.ports.release(ctx, p, svc.UID); err != nil {
			a.log.Warn("releasing a node port failed; the orphan collector will free it", "port", p, "service", svc.Namespace+"/"+svc.Name, "err", err)
		}
	}
}
