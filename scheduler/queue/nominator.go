package queue

import (
	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nominator remembers which pods preemption nominated to which node.
// It is guarded by the queue's lock.
type nominator struct {
	byNode map[string][]*framework.PodInfo
	node   map[types.UID]string
}

func newNominator() nominator {
	return nominator{byNode: map[string][]*framework.PodInfo{}, node: map[types.UID]string{}}
}

func (n *nominator) add(pi *framework.PodInfo, nodeName string) {
	n.remove(pi.Pod)
	if nodeName == "" {
		return
	}
	n.node[pi.Pod.UID] = nodeName
	n.byNode[nodeName] = append(n.byNode[nodeName], pi)
}

func (n *nominator) remove(pod *v1.Pod) {
	nodeName, ok := n.node[pod.UID]
	if !ok {
		return
	}
	delete(n.node, pod.UID)
	pods := n.byNode[nodeName]
	for i, p := range pods {
		if p.Pod.UID == pod.UID {
			pods = append(pods[:i], pods[i+1:]...)
			break
		}
	}
	if len(pods) == 0 {
		delete(n.byNode, nodeName)
		return
	}
	n.byNode[nodeName] = pods
}

// AddNominatedPod implements framework.PodNominator.
func (q *Queue) AddNominatedPod(pi *framework.PodInfo, nodeName string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominated.add(pi, nodeName)
	q.nominatedCount.Store(int64(len(q.nominated.node)))
}

// DeleteNominatedPodIfExists implements framework.PodNominator.
func (q *Queue) DeleteNominatedPodIfExists(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominated.remove(pod)
	q.nominatedCount.Store(int64(len(q.nominated.node)))
}

// NominatedPods implements framework.PodNominator.
func (q *Queue) NominatedPods() map[string][]*framework.PodInfo {
	if q.nominatedCount.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string][]*framework.PodInfo, len(q.nominated.byNode))
	for n, pods := range q.nominated.byNode {
		out[n] = append([]*framework.PodInfo(nil), pods...)
	}
	return out
}

// NominatedPodsForNode implements framework.PodNominator. The slice is a
// copy; the PodInfos are shared and immutable.
func (q *Queue) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	// Filters ask for every node of every cycle; nominations are rare.
	if q.nominatedCount.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	pods := q.nominated.byNode[nodeName]
	if len(pods) == 0 {
		return nil
	}
	return append([]*framework.PodInfo(nil), pods...)
}
