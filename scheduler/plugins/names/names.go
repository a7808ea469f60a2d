// Package names holds the names of the built-in scheduler plugins, shared
// by the configuration (which validates them) and the plugins.
package names

// The built-in plugins.
const (
	PrioritySort                    = "PrioritySort"
	NodeUnschedulable               = "NodeUnschedulable"
	NodeName                        = "NodeName"
	TaintToleration                 = "TaintToleration"
	NodeAffinity                    = "NodeAffinity"
	NodePorts                       = "NodePorts"
	NodeResourcesFit                = "NodeResourcesFit"
	PodTopologySpread               = "PodTopologySpread"
	InterPodAffinity                = "InterPodAffinity"
	DefaultPreemption               = "DefaultPreemption"
	NodeResourcesLeastAllocated     = "NodeResourcesLeastAllocated"
	NodeResourcesBalancedAllocation = "NodeResourcesBalancedAllocation"
	DefaultBinder                   = "DefaultBinder"
)

// All returns every built-in plugin name in the default order, which is
// the order plugins run in within each phase: cheap filters that reject
// many nodes come first, and the first rejection is the reason reported
// for a node.
func All() []string {
	return []string{
		PrioritySort,
		NodeUnschedulable,
		NodeName,
		TaintToleration,
		NodeAffinity,
		NodePorts,
		NodeResourcesFit,
		PodTopologySpread,
		InterPodAffinity,
		DefaultPreemption,
		NodeResourcesLeastAllocated,
		NodeResourcesBalancedAllocation,
		DefaultBinder,
	}
}
