package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// errNotServed means an owner reference names a kind the API does not
// serve (yet): the dependent is retried rather than judged.
var errNotServed = errors.New("garbagecollector: owner kind not served")

func (c *Controller) processDelete(ctx context.Context) bool {
	n, quit := c.deleteQueue.Get()
	if quit {
		return false
	}
	defer c.deleteQueue.Done(n)
	if err := c.attemptToDelete(ctx, n); err != nil {
		if ctx.Err() == nil {
			c.log.Debug("collecting, will retry", "object", n.ref.String(), "err", err)
			c.deleteQueue.AddRateLimited(n)
		}
		return true
	}
	c.deleteQueue.Forget(n)
	return true
}

func (c *Controller) processOrphan(ctx context.Context) bool {
	n, quit := c.orphanQueue.Get()
	if quit {
		return false
	}
	defer c.orphanQueue.Done(n)
	if err := c.orphanDependents(ctx, n); err != nil {
		if ctx.Err() == nil {
			c.log.Debug("orphaning, will retry", "object", n.ref.String(), "err", err)
			c.orphanQueue.AddRateLimited(n)
		}
		return true
	}
	c.orphanQueue.Forget(n)
	return true
}

// attemptToDelete decides, from the API's current view, whether n must
// go: when none of its owners exists any more, or when an owner being
// deleted in the foreground waits for it.
func (c *Controller) attemptToDelete(ctx context.Context, n *node) error {
	ref, _, _, deletingDependents, dependents := c.graph.state(n)
	latest, api, err := c.getObject(ctx, ref)
	switch {
	case apierrors.IsNotFound(err):
		c.changes.Add(&event{typ: virtualDeleteEvent, ref: ref})
		return nil
	case err != nil:
		return err
	case latest.GetUID() != ref.UID:
		c.changes.Add(&event{typ: virtualDeleteEvent, ref: ref})
		return nil
	}
	if latest.GetDeletionTimestamp() != nil {
		if deletingDependents || hasFinalizer(latest, metav1.FinalizerDeleteDependents) {
			return c.finishForeground(ctx, n, latest, api)
		}
		return nil // on its way out already
	}
	owners := latest.GetOwnerReferences()
	if len(owners) == 0 {
		return nil
	}
	var solid, dangling, waiting []metav1.OwnerReference
	for _, o := range owners {
		state, err := c.ownerState(ctx, o, latest.GetNamespace())
		if err != nil {
			return err
		}
		switch state {
		case ownerAbsent:
			dangling = append(dangling, o)
		case ownerWaiting:
			waiting = append(waiting, o)
		default:
			solid = append(solid, o)
		}
	}
	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return nil
		}
		// Other owners keep it: only the references to the gone (or
		// going) ones are dropped.
		drop := map[types.UID]bool{}
		for _, o := range append(dangling, waiting...) {
			drop[o.UID] = true
		}
		return c.patchOwners(ctx, api, latest, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) { return o, !drop[o.UID] })
	case len(waiting) > 0 && dependents > 0:
		// An owner waits for it, and it has dependents of its own: it
		// goes in the foreground too, so the wait covers the whole tree.
		// A dependent already waiting for its own dependents could close
		// a cycle; the references to the waiting owners stop blocking.
		for _, d := range c.graph.dependentsOf(n) {
			if _, _, _, dd, _ := c.graph.state(d); dd {
				unblock := map[types.UID]bool{}
				for _, o := range waiting {
					unblock[o.UID] = true
				}
				if err := c.patchOwners(ctx, api, latest, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) {
					if unblock[o.UID] {
						o.BlockOwnerDeletion = ptr.To(false)
					}
					return o, true
				}); err != nil {
					return err
				}
				break
			}
		}
		return c.deleteObject(ctx, api, latest, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		c.log.Info("deleting an object whose owners are gone", "object", ref.String(), "propagation", policy)
		return c.deleteObject(ctx, api, latest, policy)
	}
}

// finishForeground removes the foregroundDeletion finalizer of n once no
// dependent blocks it, and otherwise makes sure its blocking dependents
// are being deleted.
func (c *Controller) finishForeground(ctx context.Context, n *node, latest *unstructured.Unstructured, api dynamic.ResourceInterface) error {
	blocking := c.graph.blockingDependents(n)
	for _, d := range blocking {
		if _, _, beingDeleted, _, _ := c.graph.state(d); !beingDeleted {
			c.deleteQueue.Add(d)
		}
	}
	if len(blocking) > 0 {
		return nil // their deletion events bring n back
	}
	ref, _, _, _, _ := c.graph.state(n)
	live, err := c.liveDependents(ctx, ref)
	if err != nil {
		return err
	}
	for _, d := range live {
		if d.ref.BlockOwnerDeletion != nil && *d.ref.BlockOwnerDeletion {
			return fmt.Errorf("garbagecollector: %s still has dependent %s/%s, not yet in the graph", ref, d.obj.GetNamespace(), d.obj.GetName())
		}
	}
	return c.removeFinalizer(ctx, api, latest, metav1.FinalizerDeleteDependents)
}

// orphanDependents removes the owner references to n from its dependents
// (as the API lists them), then n's orphan finalizer.
func (c *Controller) orphanDependents(ctx context.Context, n *node) error {
	ref, _, _, _, _ := c.graph.state(n)
	live, err := c.liveDependents(ctx, ref)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range live {
		if err := c.patchOwners(ctx, d.api, d.obj, func(o metav1.OwnerReference) (metav1.OwnerReference, bool) {
			return o, o.UID != ref.UID
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	latest, api, err := c.getObject(ctx, ref)
	if apierrors.IsNotFound(err) || (err == nil && latest.GetUID() != ref.UID) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.removeFinalizer(ctx, api, latest, metav1.FinalizerOrphanDependents)
}

// ownerState is what a dependent's owner reference points to.
type ownerState int

const (
	ownerSolid ownerState = iota
	ownerAbsent
	// ownerWaiting: the owner is being deleted in the foreground.
	ownerWaiting
)

// ownerState looks o up in the API, in the dependent's namespace.
func (c *Controller) ownerState(ctx context.Context, o metav1.OwnerReference, namespace string) (ownerState, error) {
	if c.absent.has(o.UID) {
		return ownerAbsent, nil
	}
	m, err := c.resolve(o.APIVersion, o.Kind)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return 0, fmt.Errorf("%w: %s %s", errNotServed, o.APIVersion, o.Kind)
		}
		return 0, err
	}
	var api dynamic.ResourceInterface
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" {
			// A cluster-scoped object cannot be owned by a namespaced
			// one: the reference can never resolve.
			c.log.Warn("cluster-scoped object with a namespaced owner", "owner", o.Kind+"/"+o.Name)
			return ownerAbsent, nil
		}
		api = c.dynamic.Resource(m.Resource).Namespace(namespace)
	} else {
		api = c.dynamic.Resource(m.Resource)
	}
	owner, err := api.Get(ctx, o.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.absent.add(o.UID)
		return ownerAbsent, nil
	case err != nil:
		return 0, err
	case owner.GetUID() != o.UID:
		c.absent.add(o.UID)
		return ownerAbsent, nil
	case owner.GetDeletionTimestamp() != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// getObject reads the object ref names from the API, returning the
// client of its resource too.
func (c *Controller) getObject(ctx context.Context, ref objectRef) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	m, err := c.resolve(ref.APIVersion, ref.Kind)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil, fmt.Errorf("%w: %s %s", errNotServed, ref.APIVersion, ref.Kind)
		}
		return nil, nil, err
	}
	var api dynamic.ResourceInterface = c.dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		api = c.dynamic.Resource(m.Resource).Namespace(ref.Namespace)
	}
	obj, err := api.Get(ctx, ref.Name, metav1.GetOptions{})
	return obj, api, err
}

// deleteObject deletes obj with policy, only if it is still the same
// object.
func (c *Controller) deleteObject(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured, policy metav1.DeletionPropagation) error {
	uid := obj.GetUID()
	err := api.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced by another object of the name
	}
	return err
}

// patchOwners rewrites obj's owner references through keep (which may
// change one, or drop it by returning false), guarded by its
// resourceVersion.
func (c *Controller) patchOwners(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured, keep func(metav1.OwnerReference) (metav1.OwnerReference, bool)) error {
	refs := []metav1.OwnerReference{}
	for _, o := range obj.GetOwnerReferences() {
		if o, ok := keep(o); ok {
			refs = append(refs, o)
		}
	}
	return c.patchMeta(ctx, api, obj, map[string]any{"ownerReferences": refs})
}

// removeFinalizer removes f from obj, guarded by its resourceVersion.
func (c *Controller) removeFinalizer(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured, f string) error {
	if !hasFinalizer(obj, f) {
		return nil
	}
	kept := []string{}
	for _, x := range obj.GetFinalizers() {
		if x != f {
			kept = append(kept, x)
		}
	}
	return c.patchMeta(ctx, api, obj, map[string]any{"finalizers": kept})
}

// patchMeta merge-patches obj's metadata; the uid and resourceVersion in
// the patch make it fail if obj changed meanwhile (the item is then
// retried from a fresh read).
func (c *Controller) patchMeta(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured, fields map[string]any) error {
	fields["uid"] = obj.GetUID()
	fields["resourceVersion"] = obj.GetResourceVersion()
	patch, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = api.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// absentCache remembers uids found absent: an owner that is gone stays
// gone, and a controller deleting many dependents of one owner looks it
// up once. It forgets everything when full.
type absentCache struct {
	mu   sync.Mutex
	max  int
	uids map[types.UID]bool
}

func newAbsentCache(max int) *absentCache { return &absentCache{max: max, uids: map[types.UID]bool{}} }

func (a *absentCache) has(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.uids[uid]
}

func (a *absentCache) add(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.uids) >= a.max {
		a.uids = map[types.UID]bool{}
	}
	a.uids[uid] = true
}
