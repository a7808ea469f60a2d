// Package nodeports keeps pods off nodes where their host ports are taken.
package nodeports

import (
	"context"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

// ErrReason is Kubernetes' wording.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

// NodePorts is the plugin.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = NodePorts{}
	_ framework.FilterPlugin      = NodePorts{}
	_ framework.EnqueueExtensions = NodePorts{}
)

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return NodePorts{}, nil }

// Name implements framework.Plugin.
func (NodePorts) Name() string { return names.NodePorts }

// PreFilter implements framework.PreFilterPlugin: pods without host
// ports skip the filter.
func (NodePorts) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	if len(pod.HostPorts) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	return nil, nil
}

// Filter implements framework.FilterPlugin.
func (NodePorts) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	for i := range pod.HostPorts {
		p := &pod.HostPorts[i]
		if node.UsedPorts.Conflicts(p.HostIP, p.Protocol, p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (NodePorts) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.AssignedPod, ActionType: framework.Delete},
		{Resource: framework.Node, ActionType: framework.Add},
	}
}
