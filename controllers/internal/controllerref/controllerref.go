// Package controllerref decides which objects a workload controller owns,
// with Kubernetes' ControllerRefManager semantics: an object is the
// controller's if its controller owner reference names it; a matching
// orphan is adopted (an owner reference is patched in); an owned object
// that no longer matches the selector is released (the reference is
// patched out). Adoption and release are strategic merge patches that
// carry the object's UID, so they fail rather than touch a namesake.
package controllerref

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// PatchFunc applies a strategic merge patch to the object namespace/name.
type PatchFunc func(ctx context.Context, namespace, name string, patch []byte) error

// Manager claims objects for one controller object.
type Manager struct {
	// Controller is the owner (a ReplicaSet, a Deployment, ...).
	Controller metav1.Object
	// Kind is Controller's group, version and kind, for owner references.
	Kind schema.GroupVersionKind
	// Match reports whether an object is selected by Controller.
	Match func(metav1.Object) bool
	// CanAdopt is asked once, before the first adoption: it rereads the
	// controller from the API and fails if it is being deleted, so that a
	// stale cache does not make a dying controller adopt objects.
	CanAdopt func(ctx context.Context) error

	once     sync.Once
	adoptErr error
}

// Claim returns the objects of objs that Controller owns once it has
// adopted matching orphans and released owned objects that no longer
// match, with every adoption or release error aggregated. An object that
// vanished meanwhile is neither claimed nor an error.
func Claim[T metav1.Object](ctx context.Context, m *Manager, objs []T, patch PatchFunc) ([]T, error) {
	var claimed []T
	var errs []error
	for _, o := range objs {
		ok, err := m.claim(ctx, o, patch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, o)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

func (m *Manager) claim(ctx context.Context, obj metav1.Object, patch PatchFunc) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.Controller.GetUID() {
			return false, nil
		}
		if m.Match(obj) {
			// Already ours: keep it even while we are being deleted, since
			// that needs no write.
			return true, nil
		}
		if m.Controller.GetDeletionTimestamp() != nil {
			return false, nil
		}
		err := patch(ctx, obj.GetNamespace(), obj.GetName(), ReleasePatch(m.Controller.GetUID(), obj.GetUID()))
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("controllerref: releasing %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		return false, nil
	}
	if m.Controller.GetDeletionTimestamp() != nil || !m.Match(obj) || obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := m.Controller.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil
	}
	if err := m.canAdopt(ctx); err != nil {
		return false, fmt.Errorf("controllerref: cannot adopt %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	ref := metav1.NewControllerRef(m.Controller, m.Kind)
	err := patch(ctx, obj.GetNamespace(), obj.GetName(), AdoptPatch(*ref, obj.GetUID()))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("controllerref: adopting %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}

func (m *Manager) canAdopt(ctx context.Context) error {
	if m.CanAdopt == nil {
		return nil
	}
	m.once.Do(func() { m.adoptErr = m.CanAdopt(ctx) })
	return m.adoptErr
}

// RecheckDeletionTimestamp returns a CanAdopt function: get rereads the
// controller (bypassing the cache), which must still be the object of uid
// and must not be being deleted.
func RecheckDeletionTimestamp(uid types.UID, get func(ctx context.Context) (metav1.Object, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := get(ctx)
		if err != nil {
			return err
		}
		if fresh.GetUID() != uid {
			return fmt.Errorf("controllerref: original %s/%s is gone: got uid %v, wanted %v",
				fresh.GetNamespace(), fresh.GetName(), fresh.GetUID(), uid)
		}
		if fresh.GetDeletionTimestamp() != nil {
			return fmt.Errorf("controllerref: %s/%s has just been deleted at %v",
				fresh.GetNamespace(), fresh.GetName(), fresh.GetDeletionTimestamp())
		}
		return nil
	}
}

type patchMeta struct {
	OwnerReferences []any     `json:"ownerReferences"`
	UID             types.UID `json:"uid"`
}

// AdoptPatch adds ref to an object's owner references; uid makes the
// patch fail on any other object of the same name.
func AdoptPatch(ref metav1.OwnerReference, uid types.UID) []byte {
	return mustJSON(map[string]patchMeta{"metadata": {OwnerReferences: []any{ref}, UID: uid}})
}

// ReleasePatch removes the owner reference to owner from the object of
// uid.
func ReleasePatch(owner, uid types.UID) []byte {
	del := map[string]any{"$patch": "delete", "uid": owner}
	return mustJSON(map[string]patchMeta{"metadata": {OwnerReferences: []any{del}, UID: uid}})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("controllerref: encoding a patch: %v", err))
	}
	return b
}
