package controllerref

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Updated routes an owned object's update to the controllers it concerns:
// its previous controller when the reference changed, and its current one
// (returned, with true); an orphan whose labels or reference changed goes
// to every controller that selects it and may adopt it (matching).
// resolve returns the cached controller a reference names, or nil.
func Updated[T metav1.Object, O comparable](old, cur T, resolve func(namespace string, ref *metav1.OwnerReference) O,
	matching func(T) []O, enqueue func(obj any)) (O, bool) {
	var none O
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if o := resolve(old.GetNamespace(), oldRef); o != none {
			enqueue(o)
		}
	}
	if curRef != nil {
		o := resolve(cur.GetNamespace(), curRef)
		if o == none {
			return none, false
		}
		enqueue(o)
		return o, true
	}
	if refChanged || !reflect.DeepEqual(old.GetLabels(), cur.GetLabels()) {
		for _, o := range matching(cur) {
			enqueue(o)
		}
	}
	return none, false
}

// Deleted returns the object of a delete event, unwrapping the tombstone
// an informer delivers for a deletion it missed.
func Deleted[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
