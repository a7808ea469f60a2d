package garbagecollector

import (
	"slices"

	"cairn/controllers/internal/clusterutil"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// eventType is what happened to an object.
type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
	// virtualDeleteEvent: the collector found in the API that an object
	// the graph holds does not exist.
	virtualDeleteEvent
)

// event is a change for the graph builder, from an informer or from the
// deletion workers.
type event struct {
	typ eventType
	obj *metav1.PartialObjectMetadata
	gvk schema.GroupVersionKind
	// ref names the object of a virtual delete.
	ref objectRef
}

// processEvent applies one change to the graph and queues the objects it
// may have made collectable. It runs on one goroutine, in event order.
func (c *Controller) processEvent(ev *event) {
	g := c.graph
	if ev.typ == virtualDeleteEvent {
		c.virtualDelete(ev.ref)
		return
	}
	obj := ev.obj
	ref := objectRef{APIVersion: ev.gvk.GroupVersion().String(), Kind: ev.gvk.Kind, Name: obj.Name, UID: obj.UID, Namespace: obj.Namespace}
	deleting := obj.DeletionTimestamp != nil
	foreground := deleting && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	orphaning := deleting && slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents)

	g.mu.Lock()
	n, found := g.nodes[obj.UID]
	if ev.typ == deleteEvent {
		if !found {
			g.mu.Unlock()
			return
		}
		c.unsafeRemove(n)
		g.mu.Unlock()
		return
	}
	var virtuals []*node
	ownersChanged := !found
	if !found {
		n = &node{ref: ref, owners: obj.OwnerReferences, dependents: map[*node]bool{}}
		g.nodes[obj.UID] = n
		virtuals = g.unsafeLink(n)
	} else {
		n.ref, n.virtual = ref, false
		if !equality.Semantic.DeepEqual(n.owners, obj.OwnerReferences) {
			ownersChanged = true
			// Owners that lost this dependent (or its blocking) may now
			// be free to finish a foreground deletion.
			for _, o := range n.owners {
				if owner, ok := g.nodes[o.UID]; ok && owner.deletingDependents {
					c.deleteQueue.Add(owner)
				}
			}
			g.unsafeUnlink(n)
			n.owners = obj.OwnerReferences
			virtuals = g.unsafeLink(n)
		}
	}
	n.beingDeleted = deleting
	n.deletingDependents = foreground
	var dependents []*node
	if foreground {
		for d := range n.dependents {
			dependents = append(dependents, d)
		}
	}
	g.mu.Unlock()

	for _, v := range virtuals {
		c.deleteQueue.Add(v)
	}
	if len(obj.OwnerReferences) > 0 && ownersChanged {
		// A new dependent, or one with new owners: they may already be
		// gone (deleted while the collector was not running).
		c.deleteQueue.Add(n)
	}
	if orphaning {
		c.orphanQueue.Add(n)
	}
	if foreground {
		for _, d := range dependents {
			c.deleteQueue.Add(d)
		}
		c.deleteQueue.Add(n)
	}
}

// unsafeRemove takes n out of the graph: its dependents lost an owner
// and are checked; owners waiting for their dependents may be done.
func (c *Controller) unsafeRemove(n *node) {
	g := c.graph
	delete(g.nodes, n.ref.UID)
	g.unsafeUnlink(n)
	for d := range n.dependents {
		c.deleteQueue.Add(d)
	}
	for _, o := range n.owners {
		if owner, ok := g.nodes[o.UID]; ok && owner.deletingDependents {
			c.deleteQueue.Add(owner)
		}
	}
}

// virtualDelete handles an object found absent in the API. A virtual
// node goes; a node an informer reported stays (its informer will report
// the deletion), but its dependents are checked again: they may name it
// with the wrong kind or namespace.
func (c *Controller) virtualDelete(ref objectRef) {
	g := c.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[ref.UID]
	if !ok {
		return
	}
	if n.virtual {
		c.unsafeRemove(n)
		return
	}
	for d := range n.dependents {
		c.deleteQueue.Add(d)
	}
}

// interesting reports whether an update can change the graph or what
// the collector does with the object.
func interesting(old, cur *metav1.PartialObjectMetadata) bool {
	return !equality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		!slices.Equal(old.Finalizers, cur.Finalizers) || old.UID != cur.UID
}

// hasFinalizer reports whether m carries f.
func hasFinalizer(m metav1.Object, f string) bool { return clusterutil.HasFinalizer(m, f) }
