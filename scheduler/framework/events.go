package framework

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// EventResource is the kind of object a cluster event is about.
type EventResource string

// The resources the queue reacts to. AssignedPod is a pod bound to a
// node: its arrival or departure changes what fits there.
const (
	Node        EventResource = "Node"
	AssignedPod EventResource = "AssignedPod"
)

// ActionType is a bit set of what happened to the object.
type ActionType uint

// Node updates are split by what changed, so that a pod rejected by a
// taint is not retried on every allocatable change and no pod is retried
// on heartbeats.
const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdatePodLabel

	// Update is any kind of update.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdatePodLabel
	// All is any action.
	All = Add | Delete | Update
)

// ClusterEvent is a change in the cluster that may make pending pods
// schedulable.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
}

// Match reports whether a plugin registered for e cares about event got.
func (e ClusterEvent) Match(got ClusterEvent) bool {
	return e.Resource == got.Resource && e.ActionType&got.ActionType != 0
}

// NodeUpdateActions returns which scheduling-relevant parts of a node
// changed; 0 when only bookkeeping (heartbeats, resourceVersion) did.
func NodeUpdateActions(old, cur *v1.Node) ActionType {
	var a ActionType
	if !reflect.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) {
		a |= UpdateNodeAllocatable
	}
	if !reflect.DeepEqual(old.Labels, cur.Labels) {
		a |= UpdateNodeLabel
	}
	if old.Spec.Unschedulable != cur.Spec.Unschedulable || !reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		a |= UpdateNodeTaint
	}
	if !sameConditions(old.Status.Conditions, cur.Status.Conditions) {
		a |= UpdateNodeCondition
	}
	return a
}

func sameConditions(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	status := make(map[v1.NodeConditionType]v1.ConditionStatus, len(a))
	for _, c := range a {
		status[c.Type] = c.Status
	}
	for _, c := range b {
		if s, ok := status[c.Type]; !ok || s != c.Status {
			return false
		}
	}
	return true
}
