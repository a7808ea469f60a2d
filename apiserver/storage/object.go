package storage

import (
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// setResourceVersion sets obj's metadata.resourceVersion to rev. Every
// type a Store holds has ObjectMeta, which NewStore's codec check ensures
// is a Kubernetes object, so the accessor cannot fail for them.
func setResourceVersion(obj runtime.Object, rev int64) {
	if a, err := meta.Accessor(obj); err == nil {
		if rev == 0 {
			a.SetResourceVersion("")
			return
		}
		a.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

// withResourceVersion returns a deep copy of obj at resourceVersion rev.
func withResourceVersion(obj runtime.Object, rev int64) runtime.Object {
	cp := obj.DeepCopyObject()
	setResourceVersion(cp, rev)
	return cp
}

// shallowCopy copies obj's top-level struct: the copy's own fields (such
// as TypeMeta) may be set without touching obj, while maps, slices and
// pointers stay shared.
func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj).Elem()
	cp := reflect.New(v.Type())
	cp.Elem().Set(v)
	return cp.Interface().(runtime.Object)
}

// bookmarkObject is the object of a bookmark event: an empty object of the
// resource's type carrying only a resourceVersion, and, for the bookmark
// that ends a watch's initial events, the annotation client-go waits for.
func bookmarkObject(newObj func() runtime.Object, gvk schema.GroupVersionKind, rev int64, initialEventsEnd bool) runtime.Object {
	obj := newObj()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	setResourceVersion(obj, rev)
	if initialEventsEnd {
		if a, err := meta.Accessor(obj); err == nil {
			a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return obj
}
