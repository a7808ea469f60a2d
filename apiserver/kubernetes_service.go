package apiserver

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The `kubernetes` service in `default` is how pods reach the API: its
// cluster IP is the first of the service CIDR and its endpoints are the
// API servers.
const (
	kubernetesServiceName = "kubernetes"
	kubernetesPortName    = "https"
	defaultAPIPort        = 6443
)

// How often each API server re-checks the kubernetes service and its own
// endpoint (someone may delete them), and collects orphaned allocations.
const (
	serviceReconcileInterval = 30 * time.Second
	serviceRetryInterval     = time.Second
	orphanCollectInterval    = 10 * time.Minute
)

// maintainServices keeps the kubernetes service, with this server among
// its endpoints, and frees orphaned cluster IPs and node ports, until ctx
// ends. Every API server runs it; each write is a compare-and-swap, so
// they never undo one another.
//
// An API server that goes away stays listed in the endpoints: nothing
// removes stale entries yet (Kubernetes uses per-server leases for that).
func (s *Server) maintainServices(ctx context.Context) {
	if s.services == nil {
		return
	}
	endpoint, ok := s.advertisedEndpoint()
	if !ok {
		s.log.Info("the kubernetes service's endpoints will not list this server: its advertise address is not an IP address and port",
			"advertise", s.cfg.AdvertiseAddress, "listen", s.cfg.Listen)
	}
	nextCollect := time.Now().Add(orphanCollectInterval)
	for {
		wait := serviceReconcileInterval
		if err := s.reconcileKubernetesService(ctx, endpoint, ok); err != nil {
			s.log.Debug("reconciling the kubernetes service failed; retrying", "err", err)
			wait = serviceRetryInterval
		}
		if time.Now().After(nextCollect) {
			s.services.collectOrphans(ctx)
			nextCollect = time.Now().Add(orphanCollectInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// advertisedEndpoint is the address clients reach this server at, if it
// is an IP address (not a name, not 0.0.0.0) and a port.
func (s *Server) advertisedEndpoint() (netip.AddrPort, bool) {
	addr := s.cfg.AdvertiseAddress
	if addr == "" {
		addr = s.cfg.Listen
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().IsUnspecified() || ap.Port() == 0 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// reconcileKubernetesService creates the kubernetes service if it is
// missing and adds endpoint (when known) to its Endpoints and
// EndpointSlice.
func (s *Server) reconcileKubernetesService(ctx context.Context, endpoint netip.AddrPort, known bool) error {
	port := uint16(defaultAPIPort)
	if known {
		port = endpoint.Port()
	} else if ap, err := netip.ParseAddrPort(s.cfg.Listen); err == nil {
		port = ap.Port()
	}
	svc, err := s.ensureKubernetesService(ctx, port)
	if err != nil || !known {
		return err
	}
	if err := s.addEndpoint(ctx, endpoint); err != nil {
		return err
	}
	return s.addEndpointSlice(ctx, svc, endpoint)
}

// ensureKubernetesService returns the kubernetes service, creating it
// with the first IP of the range if it does not exist.
func (s *Server) ensureKubernetesService(ctx context.Context, port uint16) (*corev1.Service, error) {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("services")]
	if !ok {
		return nil, fmt.Errorf("apiserver: services are not served")
	}
	key := h.key(metav1.NamespaceDefault, kubernetesServiceName)
	obj, err := h.store.Get(ctx, key, storage.GetOptions{})
	if err == nil {
		return asService(obj)
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: s.services.cidr.first(),
			Ports: []corev1.ServicePort{{Name: kubernetesPortName, Protocol: corev1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	if err := beforeCreate(svc, metav1.NamespaceDefault, h.res, time.Now()); err != nil {
		return nil, err
	}
	h.res.Strategy.Default(svc)
	h.res.Strategy.PrepareForCreate(ctx, svc)
	undo, err := h.admit(ctx, svc, false)
	if err != nil {
		return nil, s.lostCreateRace(ctx, h, key, err)
	}
	out, err := h.store.Create(ctx, key, svc, 0)
	if err != nil {
		undo(err)
		return nil, s.lostCreateRace(ctx, h, key, err)
	}
	s.log.Info("created the kubernetes service", "clusterIP", svc.Spec.ClusterIP)
	return asService(out)
}

// lostCreateRace words the failure to create the kubernetes service when
// another API server created it meanwhile (its IP is then taken, or its
// name), which the next reconciliation finds.
func (s *Server) lostCreateRace(ctx context.Context, h *restHandler, key string, err error) error {
	if _, getErr := h.store.Get(ctx, key, storage.GetOptions{}); getErr == nil {
		return fmt.Errorf("apiserver: another API server created the kubernetes service meanwhile")
	}
	return err
}

func asService(obj runtime.Object) (*corev1.Service, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("apiserver: the kubernetes service is a %T", obj)
	}
	return svc, nil
}

// addEndpoint lists endpoint in the kubernetes Endpoints, one subset per
// port (API servers on one host listen on different ports). It is written
// without the endpoints validation, which refuses loopback addresses that
// a single-host cluster advertises.
func (s *Server) addEndpoint(ctx context.Context, endpoint netip.AddrPort) error {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("endpoints")]
	if !ok {
		return nil
	}
	ip, port := endpoint.Addr().String(), int32(endpoint.Port())
	_, err := h.store.GuaranteedUpdate(ctx, h.key(metav1.NamespaceDefault, kubernetesServiceName), nil, func(current runtime.Object) (runtime.Object, error) {
		ep, ok := current.(*corev1.Endpoints)
		if !ok {
			return nil, fmt.Errorf("apiserver: the kubernetes endpoints are a %T", current)
		}
		if ep.UID == "" {
			if err := s.newSystemObject(ctx, h, ep); err != nil {
				return nil, err
			}
		}
		if ep.Labels == nil {
			ep.Labels = map[string]string{}
		}
		// The API servers write the EndpointSlices themselves.
		ep.Labels[discoveryv1.LabelSkipMirror] = "true"
		i := slices.IndexFunc(ep.Subsets, func(ss corev1.EndpointSubset) bool {
			return len(ss.Ports) == 1 && ss.Ports[0].Port == port && ss.Ports[0].Name == kubernetesPortName
		})
		if i < 0 {
			ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: kubernetesPortName, Port: port, Protocol: corev1.ProtocolTCP}}})
			i = len(ep.Subsets) - 1
		}
		ss := &ep.Subsets[i]
		if !slices.ContainsFunc(ss.Addresses, func(a corev1.EndpointAddress) bool { return a.IP == ip }) {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
			slices.SortFunc(ss.Addresses, func(a, b corev1.EndpointAddress) int { return strings.Compare(a.IP, b.IP) })
		}
		h.res.Strategy.Default(ep)
		return ep, nil
	}, true)
	return err
}

// addEndpointSlice lists endpoint in the kubernetes EndpointSlice of its
// port and address family. A slice has one port list, so servers on other
// ports than the service's target port get a slice of their own, named
// after the port.
func (s *Server) addEndpointSlice(ctx context.Context, svc *corev1.Service, endpoint netip.AddrPort) error {
	h, ok := s.handlers[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	if !ok {
		return nil
	}
	ip, port := endpoint.Addr().String(), int32(endpoint.Port())
	family := discoveryv1.AddressTypeIPv4
	if endpoint.Addr().Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	name := kubernetesServiceName
	if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].TargetPort.IntValue() != int(port) {
		name += "-" + strconv.Itoa(int(port))
	}
	if len(svc.Spec.IPFamilies) > 0 && string(svc.Spec.IPFamilies[0]) != string(family) {
		name += "-" + strings.ToLower(string(family))
	}
	_, err := h.store.GuaranteedUpdate(ctx, h.key(metav1.NamespaceDefault, name), nil, func(current runtime.Object) (runtime.Object, error) {
		slice, ok := current.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil, fmt.Errorf("apiserver: the kubernetes endpoint slice is a %T", current)
		}
		if slice.UID == "" {
			slice.Name = name
			if err := s.newSystemObject(ctx, h, slice); err != nil {
				return nil, err
			}
			slice.Labels = map[string]string{discoveryv1.LabelServiceName: kubernetesServiceName}
			slice.AddressType = family
			slice.Ports = []discoveryv1.EndpointPort{{Name: ptr.To(kubernetesPortName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}}
		}
		if !slices.ContainsFunc(slice.Endpoints, func(e discoveryv1.Endpoint) bool { return slices.Contains(e.Addresses, ip) }) {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
			slices.SortFunc(slice.Endpoints, func(a, b discoveryv1.Endpoint) int { return strings.Compare(firstAddress(a), firstAddress(b)) })
		}
		h.res.Strategy.Default(slice)
		return slice, nil
	}, true)
	return err
}

// newSystemObject fills the server-owned metadata of an object this
// server creates in default, named after the kubernetes service unless
// it already has a name.
func (s *Server) newSystemObject(ctx context.Context, h *restHandler, obj runtime.Object) error {
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	if m.GetName() == "" {
		m.SetName(kubernetesServiceName)
	}
	m.SetResourceVersion("")
	if err := beforeCreate(obj, metav1.NamespaceDefault, h.res, time.Now()); err != nil {
		return err
	}
	h.res.Strategy.PrepareForCreate(ctx, obj)
	return nil
}

func firstAddress(e discoveryv1.Endpoint) string {
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0]
}
