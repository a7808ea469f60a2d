package printers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// SetIncludeObject trims each row's Object to what the request's
// ?includeObject= asked for:
//
//   - None drops it;
//   - Metadata, also the default (""), keeps a PartialObjectMetadata, which
//     is what kubectl needs for --show-labels and -L;
//   - Object keeps the whole object, with its apiVersion and kind set so
//     that clients can decode it.
//
// Any other value is an ErrIncludeObject. Objects are never modified in
// place: they may be shared, e.g. with a watch cache.
func SetIncludeObject(table *metav1.Table, policy metav1.IncludeObjectPolicy) error {
	switch policy {
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject, "":
	default:
		return fmt.Errorf("%w %q: use None, Metadata or Object", ErrIncludeObject, policy)
	}
	for i := range table.Rows {
		row := &table.Rows[i]
		obj := row.Object.Object
		switch {
		case policy == metav1.IncludeNone:
			row.Object = runtime.RawExtension{}
		case obj == nil:
			// Already raw bytes or empty: nothing to trim.
		case policy == metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: withKind(obj)}
		default:
			m, err := meta.Accessor(obj)
			if err != nil {
				return fmt.Errorf("%w: %T has no object metadata", ErrNotPrintable, obj)
			}
			partial := meta.AsPartialObjectMetadata(m)
			partial.TypeMeta = metav1.TypeMeta{
				APIVersion: tableGroupVersion(table).String(),
				Kind:       "PartialObjectMetadata",
			}
			row.Object = runtime.RawExtension{Object: partial}
		}
	}
	return nil
}

// tableGroupVersion is the meta.k8s.io version the table is sent as
// (v1, or v1beta1 for old clients); embedded metadata uses the same.
func tableGroupVersion(table *metav1.Table) schema.GroupVersion {
	if gv, err := schema.ParseGroupVersion(table.APIVersion); err == nil && gv.Group == metav1.GroupName {
		return gv
	}
	return metav1.SchemeGroupVersion
}

// withKind returns obj with apiVersion and kind set. Objects read from
// the store have an empty TypeMeta; those are copied before setting it.
func withKind(obj runtime.Object) runtime.Object {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj
	}
	out := obj.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(gvks[0])
	return out
}
