package apiserver

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The `kubernetes` service in `default` is how pods reach the API: its
// cluster IP is the first of the service CIDR and its endpoints are the
// API servers.
const (
	kubernetesServiceName = "kubernetes"
	kubernetesPortName    = "https"
	defaultAPIPort        = 6443
)

// How often each API server collects orphaned allocations, and how soon
// it retries a failed reconciliation.
const (
	serviceRetryInterval  = time.Second
	orphanCollectInterval = 10 * time.Minute
)

// maintainServices keeps the kubernetes service and its endpoints, which
// list exactly the live API servers, and frees orphaned cluster IPs and
// node ports, until ctx ends. Every API server runs it: each renews its
// own lease (endpointlease.go) and sets the endpoints from all the live
// leases; each write is a compare-and-swap and none is made when nothing
// changed, so servers that agree never rewrite the endpoints. When ctx
// ends the server takes itself out at once instead of waiting for its
// lease to expire.
func (s *Server) maintainServices(ctx context.Context) {
	if s.services == nil {
		return
	}
	endpoint, ok := s.advertisedEndpoint()
	var lease *endpointLease
	if ok {
		lease = newEndpointLease(s.cfg.Storage, endpoint, s.endpointLeaseTTL())
	} else {
		s.log.Info("the kubernetes service's endpoints will not list this server: its advertise address is not an IP address and port",
			"advertise", s.cfg.AdvertiseAddress, "listen", s.cfg.Listen)
	}
	// Renewing three times per TTL lets two renewals fail (a leader
	// election, a slow disk) before the lease expires.
	interval := s.endpointLeaseTTL() / 3
	nextCollect := time.Now().Add(orphanCollectInterval)
	for {
		wait := interval
		if err := s.reconcileKubernetesService(ctx, lease); err != nil {
			s.log.Debug("reconciling the kubernetes service failed; retrying", "err", err)
			wait = min(wait, serviceRetryInterval)
		}
		if time.Now().After(nextCollect) {
			s.services.collectOrphans(ctx)
			nextCollect = time.Now().Add(orphanCollectInterval)
		}
		select {
		case <-ctx.Done():
			s.leaveKubernetesService(lease)
			return
		case <-time.After(wait):
		}
	}
}

// leaveKubernetesService drops this server's lease and its endpoint, on
// the way out. It is best effort: if the store cannot be reached, the
// lease expires and the other servers drop the endpoint.
func (s *Server) leaveKubernetesService(lease *endpointLease) {
	if lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := lease.revoke(ctx); err != nil {
		s.log.Debug("revoking the endpoint lease failed; it will expire", "err", err)
		return
	}
	if err := s.reconcileKubernetesService(ctx, nil); err != nil {
		s.log.Debug("removing this server from the kubernetes endpoints failed; the others will", "err", err)
	}
}

// endpointLeaseTTL is Config.EndpointLeaseTTL or its default.
func (s *Server) endpointLeaseTTL() time.Duration {
	if s.cfg.EndpointLeaseTTL > 0 {
		return s.cfg.EndpointLeaseTTL
	}
	return DefaultEndpointLeaseTTL
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
// missing, renews lease (this server's, nil when it is not listed) and
// sets the service's Endpoints and EndpointSlices to the live API
// servers. Each object's update reads the live servers after the object
// it replaces, so when servers reconcile at once the last write cannot
// drop a server whose lease the previous writer had seen.
func (s *Server) reconcileKubernetesService(ctx context.Context, lease *endpointLease) error {
	port := uint16(defaultAPIPort)
	if lease != nil {
		port = lease.endpoint.Port()
	} else if ap, err := netip.ParseAddrPort(s.cfg.Listen); err == nil {
		port = ap.Port()
	}
	svc, err := s.ensureKubernetesService(ctx, port)
	if err != nil {
		return err
	}
	if lease != nil {
		if err := lease.renew(ctx); err != nil {
			return err
		}
	}
	if err := s.setEndpoints(ctx); err != nil {
		return err
	}
	return s.setEndpointSlices(ctx, svc)
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
