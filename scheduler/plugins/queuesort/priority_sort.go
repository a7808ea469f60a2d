// Package queuesort orders the active queue.
package queuesort

import (
	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

// PrioritySort puts higher-priority pods first, then older pods (by
// creation time, then by when they entered the queue).
type PrioritySort struct{}

var _ framework.QueueSortPlugin = PrioritySort{}

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return PrioritySort{}, nil }

// Name implements framework.Plugin.
func (PrioritySort) Name() string { return names.PrioritySort }

// Less implements framework.QueueSortPlugin.
func (PrioritySort) Less(a, b *framework.QueuedPodInfo) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	ca, cb := a.Pod.CreationTimestamp, b.Pod.CreationTimestamp
	if !ca.Equal(&cb) {
		return ca.Before(&cb)
	}
	return a.Timestamp.Before(b.Timestamp)
}
