package kubelet

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// resyncPeriod replays the informers' caches, a safety net for a missed
// event.
const resyncPeriod = 5 * time.Minute

// startInformers watches the node's pods (by spec.nodeName), the nodes
// (for this node's podCIDR and the peers' routes) and the services (for
// pods' service variables), and waits for their caches.
func (k *Kubelet) startInformers(ctx context.Context) error {
	pods := informers.NewSharedInformerFactoryWithOptions(k.client, resyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	all := informers.NewSharedInformerFactory(k.client, resyncPeriod)
	podInformer := pods.Core().V1().Pods()
	nodeInformer := all.Core().V1().Nodes()
	serviceInformer := all.Core().V1().Services()
	k.podLister = podInformer.Lister()
	k.nodeLister = nodeInformer.Lister()
	k.serviceLister = serviceInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(obj) },
		UpdateFunc: func(_, obj any) { k.podChanged(obj) },
		DeleteFunc: func(obj any) { k.podDeleted(obj) },
	}); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.nodeChanged(nil, obj) },
		UpdateFunc: func(old, obj any) { k.nodeChanged(old, obj) },
		DeleteFunc: func(any) { k.kickNetwork() },
	}); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	pods.Start(ctx.Done())
	all.Start(ctx.Done())
	for _, synced := range []map[reflect.Type]bool{pods.WaitForCacheSync(ctx.Done()), all.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				return fmt.Errorf("kubelet: the %v cache did not sync: %w", typ, ctx.Err())
			}
		}
	}
	return nil
}

func (k *Kubelet) podChanged(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		k.workers.update(pod)
	}
}

func (k *Kubelet) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		k.workers.remove(pod)
	}
}

func (k *Kubelet) nodeChanged(old, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if o, ok := old.(*corev1.Node); ok && n.Name != k.cfg.NodeName &&
		o.Spec.PodCIDR == n.Spec.PodCIDR && internalIP(o) == internalIP(n) && len(o.Spec.PodCIDRs) == len(n.Spec.PodCIDRs) {
		return // a heartbeat of a peer: nothing for the routes
	}
	k.kickNetwork()
}
