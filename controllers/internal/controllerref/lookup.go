package controllerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Resolve returns the cached owner that ref names, if ref is of kind and
// the cached object is that very one (same UID, not a namesake created
// since); get reads the cache by name.
func Resolve[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) (T, bool) {
	var zero T
	if ref.Kind != kind {
		return zero, false
	}
	owner, err := get(ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return zero, false
	}
	return owner, true
}

// Selecting returns the owners whose selector selects an object with
// labels lbls: those that may adopt it when it is an orphan. An empty or
// invalid selector selects nothing.
func Selecting[T any](owners []T, selector func(T) *metav1.LabelSelector, lbls map[string]string) []T {
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selector(o))
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(lbls)) {
			continue
		}
		out = append(out, o)
	}
	return out
}
