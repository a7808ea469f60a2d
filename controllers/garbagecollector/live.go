package garbagecollector

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// liveDependent is an object found in the API with an owner reference
// to a given owner.
type liveDependent struct {
	obj *unstructured.Unstructured
	api dynamic.ResourceInterface
	ref metav1.OwnerReference
}

// liveDependents lists, in the API, the objects with an owner reference
// to owner. The graph can lag the API (a dependent created a moment
// before its owner was deleted may not have reached its informer): the
// steps that would make that lag visible — removing an orphan or
// foreground finalizer, after which the owner is gone — check the API
// itself. They are rare, so the lists are affordable.
func (c *Controller) liveDependents(ctx context.Context, owner objectRef) ([]liveDependent, error) {
	namespace := metav1.NamespaceAll
	if m, err := c.resolve(owner.APIVersion, owner.Kind); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
		namespace = owner.Namespace
	}
	c.mu.Lock()
	gvrs := make([]schema.GroupVersionResource, 0, len(c.monitors))
	for gvr := range c.monitors {
		gvrs = append(gvrs, gvr)
	}
	c.mu.Unlock()
	var out []liveDependent
	for _, gvr := range gvrs {
		list, err := c.dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			for _, r := range obj.GetOwnerReferences() {
				if r.UID != owner.UID {
					continue
				}
				var api dynamic.ResourceInterface = c.dynamic.Resource(gvr)
				if obj.GetNamespace() != "" {
					api = c.dynamic.Resource(gvr).Namespace(obj.GetNamespace())
				}
				out = append(out, liveDependent{obj: obj, api: api, ref: r})
				break
			}
		}
	}
	return out, nil
}
