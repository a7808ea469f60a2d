// Package nodeunschedulable rejects cordoned nodes.
package nodeunschedulable

import (
	"context"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

// ErrReason is Kubernetes' wording.
const ErrReason = "node(s) were unschedulable"

// NodeUnschedulable filters out nodes with spec.unschedulable, unless the
// pod tolerates the node.kubernetes.io/unschedulable taint (as DaemonSet
// pods do).
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = NodeUnschedulable{}
	_ framework.EnqueueExtensions = NodeUnschedulable{}
)

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return NodeUnschedulable{}, nil }

// Name implements framework.Plugin.
func (NodeUnschedulable) Name() string { return names.NodeUnschedulable }

// Filter implements framework.FilterPlugin.
func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	if !node.Unschedulable() {
		return nil
	}
	taint := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if framework.Tolerates(pod.Pod.Spec.Tolerations, &taint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// EventsToRegister implements framework.EnqueueExtensions.
func (NodeUnschedulable) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}}
}
