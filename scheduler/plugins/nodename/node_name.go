// Package nodename rejects nodes other than the one a pod asks for.
package nodename

import (
	"context"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

// ErrReason is Kubernetes' wording.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName filters on spec.nodeName.
type NodeName struct{}

var (
	_ framework.FilterPlugin      = NodeName{}
	_ framework.EnqueueExtensions = NodeName{}
)

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return NodeName{}, nil }

// Name implements framework.Plugin.
func (NodeName) Name() string { return names.NodeName }

// Filter implements framework.FilterPlugin.
func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if want := pod.Pod.Spec.NodeName; want != "" && want != node.Name() {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (NodeName) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.Node, ActionType: framework.Add}}
}
