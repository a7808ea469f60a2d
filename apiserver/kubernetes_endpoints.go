package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// setEndpoints makes the kubernetes Endpoints list exactly the live API
// servers, sorted, one subset per port (API servers on one host listen on
// different ports). It is written without the endpoints validation, which
// refuses the loopback addresses a single-host cluster advertises.
func (s *Server) setEndpoints(ctx context.Context) error {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("endpoints")]
	if !ok {
		return nil
	}
	_, err := h.store.GuaranteedUpdate(ctx, h.key(metav1.NamespaceDefault, kubernetesServiceName), nil, func(current runtime.Object) (runtime.Object, error) {
		ep, ok := current.(*corev1.Endpoints)
		if !ok {
			return nil, fmt.Errorf("apiserver: the kubernetes endpoints are a %T", current)
		}
		live, err := liveAPIServers(ctx, s.cfg.Storage.KV)
		if err != nil {
			return nil, err
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
		ep.Subsets = endpointSubsets(live)
		h.res.Strategy.Default(ep)
		return ep, nil
	}, true)
	return err
}

// endpointSubsets groups live (sorted by port) into one subset per port.
func endpointSubsets(live []netip.AddrPort) []corev1.EndpointSubset {
	var subsets []corev1.EndpointSubset
	for _, ep := range live {
		port := int32(ep.Port())
		if n := len(subsets); n == 0 || subsets[n-1].Ports[0].Port != port {
			subsets = append(subsets, corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: kubernetesPortName, Port: port, Protocol: corev1.ProtocolTCP}}})
		}
		ss := &subsets[len(subsets)-1]
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ep.Addr().String()})
	}
	return subsets
}

// endpointSliceSet is the content of one kubernetes EndpointSlice.
type endpointSliceSet struct {
	family discoveryv1.AddressType
	port   int32
	addrs  []string
}

// endpointSliceSets splits live into the kubernetes service's
// EndpointSlices, by name. A slice has one port list and one address
// family, so servers on another port than the service's target port, or
// of the other family, get a slice of their own, named after the port and
// family. The main slice, "kubernetes", is always there.
func endpointSliceSets(svc *corev1.Service, live []netip.AddrPort) map[string]*endpointSliceSet {
	mainPort := int32(defaultAPIPort)
	if len(svc.Spec.Ports) > 0 {
		mainPort = int32(svc.Spec.Ports[0].TargetPort.IntValue())
	}
	mainFamily := discoveryv1.AddressTypeIPv4
	if len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		mainFamily = discoveryv1.AddressTypeIPv6
	}
	sets := map[string]*endpointSliceSet{kubernetesServiceName: {family: mainFamily, port: mainPort}}
	for _, ep := range live {
		family := discoveryv1.AddressTypeIPv4
		if ep.Addr().Is6() {
			family = discoveryv1.AddressTypeIPv6
		}
		port := int32(ep.Port())
		name := kubernetesServiceName
		if port != mainPort {
			name += "-" + strconv.Itoa(int(port))
		}
		if family != mainFamily {
			name += "-" + strings.ToLower(string(family))
		}
		set := sets[name]
		if set == nil {
			set = &endpointSliceSet{family: family, port: port}
			sets[name] = set
		}
		set.addrs = append(set.addrs, ep.Addr().String())
	}
	return sets
}

// setEndpointSlices makes the kubernetes EndpointSlices list exactly the
// live API servers; a slice goes when the last server of its port or
// family does. The slices are listed before the live servers are: a
// slice written after that list, by a server the list of live servers
// missed, is then never deleted (its resourceVersion has changed).
func (s *Server) setEndpointSlices(ctx context.Context, svc *corev1.Service) error {
	h, ok := s.handlers[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	if !ok {
		return nil
	}
	existing, err := h.store.List(ctx, h.prefix(metav1.NamespaceDefault), storage.ListOptions{Predicate: func(obj runtime.Object) bool {
		slice, ok := obj.(*discoveryv1.EndpointSlice)
		return ok && slice.Labels[discoveryv1.LabelServiceName] == kubernetesServiceName && strings.HasPrefix(slice.Name, kubernetesServiceName+"-")
	}})
	if err != nil {
		return err
	}
	live, err := liveAPIServers(ctx, s.cfg.Storage.KV)
	if err != nil {
		return err
	}
	want := endpointSliceSets(svc, live)
	for name := range want {
		if err := s.setEndpointSlice(ctx, h, svc, name); err != nil {
			return err
		}
	}
	items, err := metaItems(existing)
	if err != nil {
		return err
	}
	for _, m := range items {
		if want[m.GetName()] != nil {
			continue
		}
		rv := m.GetResourceVersion()
		_, err := h.store.Delete(ctx, h.key(m.GetNamespace(), m.GetName()), &metav1.Preconditions{ResourceVersion: &rv}, nil)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// setEndpointSlice writes the slice name with the live servers it holds,
// read after the slice it replaces.
func (s *Server) setEndpointSlice(ctx context.Context, h *restHandler, svc *corev1.Service, name string) error {
	_, err := h.store.GuaranteedUpdate(ctx, h.key(metav1.NamespaceDefault, name), nil, func(current runtime.Object) (runtime.Object, error) {
		slice, ok := current.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil, fmt.Errorf("apiserver: the kubernetes endpoint slice is a %T", current)
		}
		live, err := liveAPIServers(ctx, s.cfg.Storage.KV)
		if err != nil {
			return nil, err
		}
		set := endpointSliceSets(svc, live)[name]
		switch {
		case set == nil && slice.UID == "":
			return nil, errSliceGone
		case set == nil:
			// Its last server went since the caller looked: the next
			// reconciliation deletes the slice.
			return slice, nil
		case slice.UID == "":
			slice.Name = name
			if err := s.newSystemObject(ctx, h, slice); err != nil {
				return nil, err
			}
			slice.AddressType = set.family
		}
		if slice.Labels == nil {
			slice.Labels = map[string]string{}
		}
		slice.Labels[discoveryv1.LabelServiceName] = kubernetesServiceName
		slice.Ports = []discoveryv1.EndpointPort{{Name: ptr.To(kubernetesPortName), Port: ptr.To(set.port), Protocol: ptr.To(corev1.ProtocolTCP)}}
		slice.Endpoints = nil
		for _, addr := range set.addrs {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
		}
		h.res.Strategy.Default(slice)
		return slice, nil
	}, true)
	if errors.Is(err, errSliceGone) {
		return nil
	}
	return err
}

// errSliceGone stops the creation of a slice whose last server went
// while it was being written.
var errSliceGone = errors.New("apiserver: no live API server for this endpoint slice")

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
