package controllerref

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// IndexByController is the name of the informer index of objects by the
// UID of their controller; orphans are indexed under OrphanKey of their
// namespace. It spares each sync a scan of every pod in the namespace.
const IndexByController = "workloads.controllerUID"

// OrphanKey is the index value of the orphans of namespace.
func OrphanKey(namespace string) string { return "orphan/" + namespace }

func indexByController(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanKey(m.GetNamespace())}, nil
}

// AddIndex adds IndexByController to inf, unless another controller
// sharing the informer already has.
func AddIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[IndexByController]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{IndexByController: indexByController}); err != nil {
		return fmt.Errorf("controllerref: adding the controller index: %w", err)
	}
	return nil
}

// Candidates returns the objects of indexer that a controller of uid in
// namespace may own: its own, and the namespace's orphans.
func Candidates[T any](indexer cache.Indexer, namespace string, uid string) ([]T, error) {
	var out []T
	for _, key := range []string{uid, OrphanKey(namespace)} {
		objs, err := indexer.ByIndex(IndexByController, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if t, ok := o.(T); ok {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// Owned returns the objects of indexer controlled by uid.
func Owned[T any](indexer cache.Indexer, uid string) ([]T, error) {
	objs, err := indexer.ByIndex(IndexByController, uid)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
