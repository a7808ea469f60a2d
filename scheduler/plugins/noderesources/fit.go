// Package noderesources fits pods to nodes' allocatable resources
// (NodeResourcesFit) and scores nodes by how much would be left
// (NodeResourcesLeastAllocated) and how evenly cpu and memory would be
// used (NodeResourcesBalancedAllocation).
package noderesources

import (
	"context"
	"sort"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

// TooManyPods is Kubernetes' wording for a node at its pod limit.
const TooManyPods = "Too many pods"

// Fit rejects nodes whose allocatable resources, minus the requests of
// the pods bound or assumed there, cannot hold the pod's requests.
type Fit struct{}

var (
	_ framework.FilterPlugin      = Fit{}
	_ framework.EnqueueExtensions = Fit{}
)

// NewFit is the plugin's factory.
func NewFit(framework.Handle) (framework.Plugin, error) { return Fit{}, nil }

// Name implements framework.Plugin.
func (Fit) Name() string { return names.NodeResourcesFit }

// Filter implements framework.FilterPlugin. Every insufficient resource
// is a reason of its own ("Insufficient cpu", "Insufficient memory"), as
// in Kubernetes.
func (Fit) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	reasons := Insufficient(&pod.Requests, node)
	if len(reasons) == 0 {
		return nil
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// Insufficient lists what node lacks for a pod requesting req.
func Insufficient(req *framework.Resource, node *framework.NodeInfo) []string {
	var reasons []string
	alloc, used := &node.Allocatable, &node.Requested
	if int64(len(node.Pods))+1 > alloc.AllowedPodNumber {
		reasons = append(reasons, TooManyPods)
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, "Insufficient "+string(v1.ResourceCPU))
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, "Insufficient "+string(v1.ResourceMemory))
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, "Insufficient "+string(v1.ResourceEphemeralStorage))
	}
	if len(req.Scalar) == 0 {
		return reasons
	}
	var scalar []string
	for name, v := range req.Scalar {
		if v > 0 && v > alloc.Scalar[name]-used.Scalar[name] {
			scalar = append(scalar, "Insufficient "+string(name))
		}
	}
	sort.Strings(scalar)
	return append(reasons, scalar...)
}

// EventsToRegister implements framework.EnqueueExtensions.
func (Fit) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.AssignedPod, ActionType: framework.Delete},
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable},
	}
}
