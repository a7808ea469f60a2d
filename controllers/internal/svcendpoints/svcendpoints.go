// Package svcendpoints holds what the EndpointSlice and Endpoints
// controllers share: which pods back a service, how a service port maps
// to a pod's port, and which services to resync when a pod changes.
package svcendpoints

import (
	"fmt"

	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// LabelHeadless marks the endpoints of a service without a cluster IP.
const LabelHeadless = "service.kubernetes.io/headless"

// Selected reports whether svc is filled from pods: a service without a
// selector (such as "kubernetes") has its endpoints written by someone
// else, and an ExternalName service has none.
func Selected(svc *corev1.Service) bool {
	return svc.Spec.Selector != nil && svc.Spec.Type != corev1.ServiceTypeExternalName
}

// Headless reports whether svc has no cluster IP.
func Headless(svc *corev1.Service) bool { return svc.Spec.ClusterIP == corev1.ClusterIPNone }

// PodIncluded reports whether pod belongs in a service's endpoints at all:
// it has an IP and has not finished. Terminating pods are only included
// when includeTerminating (EndpointSlices show them with their
// terminating condition; Endpoints drop them).
func PodIncluded(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if clusterutil.PodTerminal(pod) {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// PodIPs returns pod's IPs, the singular field standing in when the
// plural is empty.
func PodIPs(pod *corev1.Pod) []string {
	if len(pod.Status.PodIPs) == 0 {
		if pod.Status.PodIP == "" {
			return nil
		}
		return []string{pod.Status.PodIP}
	}
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

// FindPort resolves a service port's target port on pod: a number is
// taken as is (the service port itself when unset), a name is looked up
// among the pod's container ports of the same protocol.
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	tp := sp.TargetPort
	switch {
	case tp.Type == 0 && tp.IntVal == 0:
		return sp.Port, nil
	case tp.Type == 0:
		return tp.IntVal, nil
	}
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	for _, containers := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range containers {
			for _, p := range c.Ports {
				pp := p.Protocol
				if pp == "" {
					pp = corev1.ProtocolTCP
				}
				if p.Name == tp.StrVal && pp == proto {
					return p.ContainerPort, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("svcendpoints: no container port named %q (%s) in pod %s/%s", tp.StrVal, proto, pod.Namespace, pod.Name)
}

// Hostname returns the hostname an endpoint of pod carries in svc: the
// pod's own, when it asked to be reachable through svc as its subdomain.
func Hostname(pod *corev1.Pod, svc *corev1.Service) string {
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		return pod.Spec.Hostname
	}
	return ""
}

// ServicesOf returns the keys of the selector services in pod's namespace
// whose selector matches labels.
func ServicesOf(services corelisters.ServiceLister, namespace string, podLabels map[string]string) []string {
	list, err := services.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range list {
		if !Selected(svc) || len(svc.Spec.Selector) == 0 {
			continue
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

// PodHandlers returns pod event handlers that enqueue, in q, the services
// a pod belonged to before and after the change. Updates that cannot
// change any endpoint (a status heartbeat, say) enqueue nothing.
func PodHandlers(q clusterutil.Queue, services corelisters.ServiceLister) cache.ResourceEventHandlerFuncs {
	enqueue := func(pod *corev1.Pod, extra map[string]string) {
		for _, k := range ServicesOf(services, pod.Namespace, pod.Labels) {
			q.Add(k)
		}
		if extra != nil {
			for _, k := range ServicesOf(services, pod.Namespace, extra) {
				q.Add(k)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				enqueue(pod, nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || !endpointsMayChange(old, pod) {
				return
			}
			var oldLabels map[string]string
			if !equality.Semantic.DeepEqual(old.Labels, pod.Labels) {
				oldLabels = old.Labels
			}
			enqueue(pod, oldLabels)
		},
		DeleteFunc: func(obj any) {
			if pod, ok := clusterutil.Untombstone(obj).(*corev1.Pod); ok {
				enqueue(pod, nil)
			}
		},
	}
}

// endpointsMayChange reports whether the change from old to pod can
// change the endpoints built from it.
func endpointsMayChange(old, pod *corev1.Pod) bool {
	switch {
	case old.ResourceVersion == pod.ResourceVersion:
		return false
	case !equality.Semantic.DeepEqual(old.Labels, pod.Labels),
		old.Spec.NodeName != pod.Spec.NodeName,
		old.Spec.Hostname != pod.Spec.Hostname, old.Spec.Subdomain != pod.Spec.Subdomain,
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil),
		old.Status.Phase != pod.Status.Phase,
		clusterutil.PodReady(old) != clusterutil.PodReady(pod),
		!equality.Semantic.DeepEqual(PodIPs(old), PodIPs(pod)),
		!equality.Semantic.DeepEqual(old.Spec.Containers, pod.Spec.Containers):
		return true
	}
	return false
}
