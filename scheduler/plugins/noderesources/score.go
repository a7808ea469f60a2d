package noderesources

import (
	"context"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

// LeastAllocated prefers nodes with the most cpu and memory left after
// placing the pod (equal weights): it spreads load.
type LeastAllocated struct{}

var _ framework.ScorePlugin = LeastAllocated{}

// NewLeastAllocated is the plugin's factory.
func NewLeastAllocated(framework.Handle) (framework.Plugin, error) { return LeastAllocated{}, nil }

// Name implements framework.Plugin.
func (LeastAllocated) Name() string { return names.NodeResourcesLeastAllocated }

// Score implements framework.ScorePlugin.
func (LeastAllocated) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	cpu := leastRequested(node.NonZeroRequested.MilliCPU+pod.NonZeroRequests.MilliCPU, node.Allocatable.MilliCPU)
	mem := leastRequested(node.NonZeroRequested.Memory+pod.NonZeroRequests.Memory, node.Allocatable.Memory)
	return (cpu + mem) / 2, nil
}

// ScoreExtensions implements framework.ScorePlugin: scores are already
// in range.
func (LeastAllocated) ScoreExtensions() framework.ScoreExtensions { return nil }

// EventsToRegister implements framework.EnqueueExtensions: a score
// plugin rejects no pod, so no event concerns it.
func (LeastAllocated) EventsToRegister() []framework.ClusterEvent { return []framework.ClusterEvent{} }

func leastRequested(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// BalancedAllocation prefers nodes where cpu and memory would be used in
// the same proportion after placing the pod, so neither is stranded.
type BalancedAllocation struct{}

var _ framework.ScorePlugin = BalancedAllocation{}

// NewBalancedAllocation is the plugin's factory.
func NewBalancedAllocation(framework.Handle) (framework.Plugin, error) {
	return BalancedAllocation{}, nil
}

// Name implements framework.Plugin.
func (BalancedAllocation) Name() string { return names.NodeResourcesBalancedAllocation }

// Score implements framework.ScorePlugin: (1 - the standard deviation of
// the two usage fractions) * 100; for two values that deviation is half
// their difference.
func (BalancedAllocation) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	cpu := fraction(node.NonZeroRequested.MilliCPU+pod.NonZeroRequests.MilliCPU, node.Allocatable.MilliCPU)
	mem := fraction(node.NonZeroRequested.Memory+pod.NonZeroRequests.Memory, node.Allocatable.Memory)
	d := cpu - mem
	if d < 0 {
		d = -d
	}
	return int64((1 - d/2) * float64(framework.MaxNodeScore)), nil
}

// ScoreExtensions implements framework.ScorePlugin: scores are already
// in range.
func (BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

// EventsToRegister implements framework.EnqueueExtensions: a score
// plugin rejects no pod, so no event concerns it.
func (BalancedAllocation) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{}
}

func fraction(requested, capacity int64) float64 {
	if capacity <= 0 {
		return 1
	}
	return min(1, float64(requested)/float64(capacity))
}
