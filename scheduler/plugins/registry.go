// Package plugins assembles the built-in scheduler plugins, one
// sub-package per family.
package plugins

import (
	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/defaultbinder"
	"cairn/scheduler/plugins/defaultpreemption"
	"cairn/scheduler/plugins/interpodaffinity"
	"cairn/scheduler/plugins/names"
	"cairn/scheduler/plugins/nodeaffinity"
	"cairn/scheduler/plugins/nodename"
	"cairn/scheduler/plugins/nodeports"
	"cairn/scheduler/plugins/noderesources"
	"cairn/scheduler/plugins/nodeunschedulable"
	"cairn/scheduler/plugins/podtopologyspread"
	"cairn/scheduler/plugins/queuesort"
	"cairn/scheduler/plugins/tainttoleration"
)

// NewRegistry returns the factories of every built-in plugin.
func NewRegistry() framework.Registry {
	return framework.Registry{
		names.PrioritySort:                    queuesort.New,
		names.NodeUnschedulable:               nodeunschedulable.New,
		names.NodeName:                        nodename.New,
		names.TaintToleration:                 tainttoleration.New,
		names.NodeAffinity:                    nodeaffinity.New,
		names.NodePorts:                       nodeports.New,
		names.NodeResourcesFit:                noderesources.NewFit,
		names.PodTopologySpread:               podtopologyspread.New,
		names.InterPodAffinity:                interpodaffinity.New,
		names.DefaultPreemption:               defaultpreemption.New,
		names.NodeResourcesLeastAllocated:     noderesources.NewLeastAllocated,
		names.NodeResourcesBalancedAllocation: noderesources.NewBalancedAllocation,
		names.DefaultBinder:                   defaultbinder.New,
	}
}
