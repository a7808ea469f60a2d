package scheduler

import (
	"fmt"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// addEventHandlers routes informer events: bound pods and nodes to the
// cache, pending pods of our profiles to the queue, and the events that
// may make unschedulable pods schedulable to the queue as well.
// It returns the registrations, whose HasSynced reports when the
// handlers have seen the informers' initial lists.
func (s *Scheduler) addEventHandlers() ([]cache.InformerSynced, error) {
	podReg, err := s.informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPodAdd(obj.(*v1.Pod)) },
		UpdateFunc: func(old, cur any) { s.onPodUpdate(old.(*v1.Pod), cur.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if pod := podOf(obj); pod != nil {
				s.onPodDelete(pod)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: pod handler: %w", err)
	}
	nodeReg, err := s.informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onNodeAdd(obj.(*v1.Node)) },
		UpdateFunc: func(old, cur any) { s.onNodeUpdate(old.(*v1.Node), cur.(*v1.Node)) },
		DeleteFunc: func(obj any) {
			if node := nodeOf(obj); node != nil {
				s.cache.RemoveNode(node)
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Delete})
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: node handler: %w", err)
	}
	// Registered so the namespace lister (namespace selectors of affinity
	// terms) is started and synced.
	s.informers.Core().V1().Namespaces().Informer()
	return []cache.InformerSynced{podReg.HasSynced, nodeReg.HasSynced}, nil
}

func assigned(pod *v1.Pod) bool { return pod.Spec.NodeName != "" }

// finished pods hold no resources.
func finished(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// pending reports whether the pod is ours to schedule.
func (s *Scheduler) pending(pod *v1.Pod) bool {
	return !assigned(pod) && pod.DeletionTimestamp == nil && !finished(pod) && s.profileFor(pod) != nil
}

func (s *Scheduler) onPodAdd(pod *v1.Pod) {
	switch {
	case assigned(pod) && !finished(pod):
		s.addAssigned(pod)
	case s.pending(pod):
		s.queue.Add(pod)
	}
}

func (s *Scheduler) onPodUpdate(old, cur *v1.Pod) {
	switch {
	case assigned(cur) && finished(cur):
		s.removeAssigned(cur)
	case assigned(cur):
		if !assigned(old) {
			// Bound, by us or by someone else: no longer pending.
			s.queue.Delete(old)
			s.addAssigned(cur)
			return
		}
		if err := s.cache.UpdatePod(old, cur); err != nil {
			s.log.Error("cache: update pod", "pod", key(cur), "err", err)
		}
		if !equalLabels(old.Labels, cur.Labels) {
			s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.UpdatePodLabel})
		}
	case s.pending(cur):
		s.queue.Update(old, cur)
	default:
		// Terminating, finished, or handed to another scheduler.
		s.queue.Delete(cur)
	}
}

func (s *Scheduler) onPodDelete(pod *v1.Pod) {
	if assigned(pod) {
		s.removeAssigned(pod)
		return
	}
	s.queue.Delete(pod)
}

func (s *Scheduler) addAssigned(pod *v1.Pod) {
	if err := s.cache.AddPod(pod); err != nil {
		s.log.Error("cache: add pod", "pod", key(pod), "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add})
}

func (s *Scheduler) removeAssigned(pod *v1.Pod) {
	if err := s.cache.RemovePod(pod); err != nil {
		s.log.Error("cache: remove pod", "pod", key(pod), "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete})
}

func (s *Scheduler) onNodeAdd(node *v1.Node) {
	s.cache.AddNode(node)
	s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add})
}

func (s *Scheduler) onNodeUpdate(old, cur *v1.Node) {
	s.cache.UpdateNode(old, cur)
	if a := framework.NodeUpdateActions(old, cur); a != 0 {
		s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.Node, ActionType: a})
	}
}

func podOf(obj any) *v1.Pod {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, _ := obj.(*v1.Pod)
	return pod
}

func nodeOf(obj any) *v1.Node {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, _ := obj.(*v1.Node)
	return node
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
