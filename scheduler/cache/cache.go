// Package cache keeps the scheduler's view of nodes and the pods placed
// on them: bound pods from the informers and assumed pods the scheduler
// has placed but not yet seen bound. Per-node sums (requests, host ports,
// pods with affinity) are updated incrementally, and snapshots copy only
// the nodes that changed since the previous cycle.
//
// An assumed pod is counted on its node from Reserve until the informer
// shows it bound (AddPod confirms it) or the bind fails (ForgetPod).
// Assumed pods never expire: a bind either succeeds, and the informer
// eventually delivers the bound pod or its deletion, or fails, and the
// scheduler forgets the pod.
package cache

import (
	"fmt"
	"sync"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cache is safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	generation int64
	nodes      map[string]*nodeItem
	// head is the most recently changed node; generations decrease along
	// the list, so a snapshot stops at the first node it already has.
	head *nodeItem
	tree *nodeTree
	pods map[types.UID]*podState
}

type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
}

type podState struct {
	info    *framework.PodInfo
	assumed bool
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*nodeItem{}, tree: newNodeTree(), pods: map[types.UID]*podState{}}
}

// unsafeTouch marks a node changed: a new generation, moved to the head.
func (c *Cache) unsafeTouch(item *nodeItem) {
	c.generation++
	item.info.Generation = c.generation
	if c.head == item {
		return
	}
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	item.prev, item.next = nil, c.head
	if c.head != nil {
		c.head.prev = item
	}
	c.head = item
}

func (c *Cache) unsafeUnlink(name string, item *nodeItem) {
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.head == item {
		c.head = item.next
	}
	delete(c.nodes, name)
}

func (c *Cache) unsafeItem(name string) *nodeItem {
	item, ok := c.nodes[name]
	if !ok {
		item = &nodeItem{info: framework.NewNodeInfo(nil)}
		c.nodes[name] = item
	}
	return item
}

func (c *Cache) unsafeAddPod(pi *framework.PodInfo, assumed bool) {
	item := c.unsafeItem(pi.Pod.Spec.NodeName)
	item.info.AddPod(pi)
	c.unsafeTouch(item)
	c.pods[pi.Pod.UID] = &podState{info: pi, assumed: assumed}
}

func (c *Cache) unsafeRemovePod(st *podState) error {
	pod := st.info.Pod
	name := pod.Spec.NodeName
	item, ok := c.nodes[name]
	if !ok {
		return fmt.Errorf("cache: pod %s/%s is on node %q, which is not cached", pod.Namespace, pod.Name, name)
	}
	if err := item.info.RemovePod(pod); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	delete(c.pods, pod.UID)
	if len(item.info.Pods) == 0 && item.info.Node() == nil {
		c.unsafeUnlink(name, item)
		return nil
	}
	c.unsafeTouch(item)
	return nil
}

// AssumePod counts pi, whose spec.nodeName is set to the chosen node, as
// placed until it is confirmed or forgotten.
func (c *Cache) AssumePod(pi *framework.PodInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pi.Pod.UID]; ok {
		return fmt.Errorf("cache: pod %s/%s is already in the cache, cannot assume it", pi.Pod.Namespace, pi.Pod.Name)
	}
	c.unsafeAddPod(pi, true)
	return nil
}

// ForgetPod drops an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	if !st.assumed {
		return fmt.Errorf("cache: pod %s/%s is bound, not assumed: cannot forget it", pod.Namespace, pod.Name)
	}
	return c.unsafeRemovePod(st)
}

// IsAssumedPod reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pods[pod.UID]
	return ok && st.assumed
}

// AddPod records a bound pod from the informer, confirming it if it was
// assumed (moving it if someone else bound it elsewhere).
func (c *Cache) AddPod(pod *v1.Pod) error {
	pi := framework.NewPodInfo(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.pods[pod.UID]; ok {
		if err := c.unsafeRemovePod(st); err != nil {
			return err
		}
	}
	c.unsafeAddPod(pi, false)
	return nil
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(_, cur *v1.Pod) error {
	return c.AddPod(cur)
}

// RemovePod drops a pod (deleted, or finished).
func (c *Cache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	return c.unsafeRemovePod(st)
}

// AddNode records a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item := c.unsafeItem(node.Name)
	old := item.info.Node()
	item.info.SetNode(node)
	c.tree.update(old, node)
	c.unsafeTouch(item)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(_, cur *v1.Node) { c.AddNode(cur) }

// RemoveNode forgets a node. Its pods stay accounted for until they are
// deleted too, in case the node comes back.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	if old := item.info.Node(); old != nil {
		c.tree.remove(old)
	}
	item.info.RemoveNode()
	if len(item.info.Pods) == 0 {
		c.unsafeUnlink(node.Name, item)
		return
	}
	c.unsafeTouch(item)
}

// NodeCount is the number of nodes known.
func (c *Cache) NodeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tree.numNodes
}

// PodCount is the number of pods placed, assumed ones included.
func (c *Cache) PodCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}

// NodeInfo returns a copy of a node's aggregate, nil if unknown.
func (c *Cache) NodeInfo(name string) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[name]
	if !ok {
		return nil
	}
	return item.info.Clone()
}

// UpdateSnapshot brings s up to date, copying only the nodes that changed
// since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodesChanged, affinityChanged := false, false
	for item := c.head; item != nil && item.info.Generation > s.generation; item = item.next {
		node := item.info.Node()
		if node == nil {
			continue
		}
		existing, ok := s.nodeInfoMap[node.Name]
		if !ok {
			nodesChanged = true
			existing = &framework.NodeInfo{}
			s.nodeInfoMap[node.Name] = existing
		}
		clone := item.info.Clone()
		if (len(existing.PodsWithAffinity) > 0) != (len(clone.PodsWithAffinity) > 0) ||
			(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(clone.PodsWithRequiredAntiAffinity) > 0) {
			affinityChanged = true
		}
		// Overwrite in place: the lists hold pointers to existing.
		*existing = *clone
	}
	if c.head != nil {
		s.generation = c.head.info.Generation
	}
	if nodesChanged || len(s.nodeInfoMap) != c.tree.numNodes {
		for name := range s.nodeInfoMap {
			if item, ok := c.nodes[name]; !ok || item.info.Node() == nil {
				delete(s.nodeInfoMap, name)
			}
		}
		names := c.tree.list()
		s.nodeInfoList = s.nodeInfoList[:0]
		for _, name := range names {
			s.nodeInfoList = append(s.nodeInfoList, s.nodeInfoMap[name])
		}
		affinityChanged = true
	}
	if affinityChanged {
		s.updateAffinityLists()
	}
}
