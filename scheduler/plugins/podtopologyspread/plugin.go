package podtopologyspread

import (
	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"
)

// PodTopologySpread is the plugin.
type PodTopologySpread struct {
	h framework.Handle
}

var (
	_ framework.PreFilterPlugin     = (*PodTopologySpread)(nil)
	_ framework.PreFilterExtensions = (*PodTopologySpread)(nil)
	_ framework.FilterPlugin        = (*PodTopologySpread)(nil)
	_ framework.PreScorePlugin      = (*PodTopologySpread)(nil)
	_ framework.ScorePlugin         = (*PodTopologySpread)(nil)
	_ framework.EnqueueExtensions   = (*PodTopologySpread)(nil)
)

// New is the plugin's factory.
func New(h framework.Handle) (framework.Plugin, error) { return &PodTopologySpread{h: h}, nil }

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return names.PodTopologySpread }

// EventsToRegister implements framework.EnqueueExtensions.
func (*PodTopologySpread) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.AssignedPod, ActionType: framework.All},
		{Resource: framework.Node, ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint},
	}
}
