package clusterutil

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// QueueNamespaces adds every namespace the informer sees created or
// changed to q, by name, for controllers that keep something in each.
func QueueNamespaces(inf coreinformers.NamespaceInformer, q Queue) error {
	add := func(obj any) {
		if ns, ok := Untombstone(obj).(*corev1.Namespace); ok {
			q.Add(ns.Name)
		}
	}
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
	})
	return err
}

// ActiveNamespace reports whether the namespace exists and is not being
// deleted, so that objects may still be created in it.
func ActiveNamespace(namespaces corelisters.NamespaceLister, name string) (bool, error) {
	ns, err := namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ns.DeletionTimestamp == nil && ns.Status.Phase != corev1.NamespaceTerminating, nil
}
