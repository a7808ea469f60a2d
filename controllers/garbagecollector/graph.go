package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef names an object: its owner-reference coordinates and
// namespace ("" for cluster-scoped objects).
type objectRef struct {
	APIVersion, Kind, Name string
	UID                    types.UID
	Namespace              string
}

func (r objectRef) String() string {
	return fmt.Sprintf("%s %s %s/%s (%s)", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// node is one object of the dependency graph.
//
// The graph links every object with ownerReferences to its owners. An
// owner that has not been seen (yet) by an informer is a virtual node:
// it exists only as someone's owner, and the collector checks it in the
// API. Example: pod P has an owner reference to ReplicaSet R. If R's
// informer has not listed R when P arrives, R is added as a virtual
// node and queued: looking R up either finds it (its informer will add
// it for real) or not, in which case R is removed from the graph and P,
// whose only owner is gone, is deleted.
type node struct {
	ref    objectRef
	owners []metav1.OwnerReference
	// dependents are the nodes with an owner reference to this one.
	dependents map[*node]bool
	// virtual is true until an informer reported the object.
	virtual bool
	// beingDeleted: the object has a deletionTimestamp.
	beingDeleted bool
	// deletingDependents: it is being deleted in the foreground and
	// waits for its blocking dependents to go.
	deletingDependents bool
}

// graph is the dependency graph, keyed by uid. Its lock guards every node
// field: the graph builder writes, the deletion workers read.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

func (g *graph) get(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// unsafeLink adds n to the dependents of each of its owners, creating
// virtual owners as needed, and returns the virtual owners created.
func (g *graph) unsafeLink(n *node) []*node {
	var created []*node
	for _, o := range n.owners {
		owner, ok := g.nodes[o.UID]
		if !ok {
			// The owner's namespace is the dependent's: an object can
			// only be owned from its own namespace (or cluster-wide, in
			// which case the lookup by namespace fails and tells).
			owner = &node{ref: objectRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: n.ref.Namespace},
				dependents: map[*node]bool{}, virtual: true}
			g.nodes[o.UID] = owner
			created = append(created, owner)
		}
		owner.dependents[n] = true
	}
	return created
}

// unsafeUnlink removes n from its owners' dependents.
func (g *graph) unsafeUnlink(n *node) {
	for _, o := range n.owners {
		if owner, ok := g.nodes[o.UID]; ok {
			delete(owner.dependents, n)
		}
	}
}

// dependentsOf returns a snapshot of n's dependents.
func (g *graph) dependentsOf(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

// blockingDependents returns n's dependents whose reference to n has
// blockOwnerDeletion: a foreground deletion of n waits for them.
func (g *graph) blockingDependents(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for d := range n.dependents {
		for _, o := range d.owners {
			if o.UID == n.ref.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// state returns a snapshot of n's flags and identity.
func (g *graph) state(n *node) (ref objectRef, virtual, beingDeleted, deletingDependents bool, dependents int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return n.ref, n.virtual, n.beingDeleted, n.deletingDependents, len(n.dependents)
}
