package queue

import (
	"container/heap"

	"cairn/scheduler/framework"

	"k8s.io/apimachinery/pkg/types"
)

// podHeap is a priority queue of pods, addressable by UID so that updates
// and deletions are O(log n).
type podHeap struct {
	items []*framework.QueuedPodInfo
	index map[types.UID]int
	less  func(a, b *framework.QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *framework.QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[types.UID]int{}, less: less}
}

// Len, Less, Swap, Push and Pop implement heap.Interface; callers use
// the methods below instead.
func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].Pod.UID] = i
	h.index[h.items[j].Pod.UID] = j
}
func (h *podHeap) Push(x any) {
	p := x.(*framework.QueuedPodInfo)
	h.index[p.Pod.UID] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeap) Pop() any {
	last := len(h.items) - 1
	p := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	delete(h.index, p.Pod.UID)
	return p
}

// addOrUpdate inserts p, or replaces the entry with p's UID.
func (h *podHeap) addOrUpdate(p *framework.QueuedPodInfo) {
	if i, ok := h.index[p.Pod.UID]; ok {
		h.items[i] = p
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *podHeap) get(uid types.UID) *framework.QueuedPodInfo {
	if i, ok := h.index[uid]; ok {
		return h.items[i]
	}
	return nil
}

func (h *podHeap) remove(uid types.UID) *framework.QueuedPodInfo {
	i, ok := h.index[uid]
	if !ok {
		return nil
	}
	return heap.Remove(h, i).(*framework.QueuedPodInfo)
}

func (h *podHeap) peek() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *podHeap) pop() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*framework.QueuedPodInfo)
}
