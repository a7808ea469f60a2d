// Package tainttoleration keeps pods off nodes whose taints they do not
// tolerate (NoSchedule, NoExecute) and prefers nodes with fewer
// untolerated PreferNoSchedule taints.
package tainttoleration

import (
	"context"
	"fmt"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
)

const stateKey framework.StateKey = names.TaintToleration

// TaintToleration is the plugin.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = TaintToleration{}
	_ framework.PreScorePlugin    = TaintToleration{}
	_ framework.ScorePlugin       = TaintToleration{}
	_ framework.EnqueueExtensions = TaintToleration{}
)

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return TaintToleration{}, nil }

// Name implements framework.Plugin.
func (TaintToleration) Name() string { return names.TaintToleration }

// Filter implements framework.FilterPlugin.
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	taints := node.Taints()
	for i := range taints {
		t := &taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !framework.Tolerates(pod.Pod.Spec.Tolerations, t) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
		}
	}
	return nil
}

type preScoreState struct {
	tolerations []v1.Toleration
}

// Clone implements framework.StateData.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin: it keeps the tolerations
// that can apply to PreferNoSchedule taints.
func (TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	var tols []v1.Toleration
	for _, t := range pod.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(stateKey, &preScoreState{tolerations: tols})
	return nil
}

// Score implements framework.ScorePlugin: the raw score counts the
// untolerated PreferNoSchedule taints (normalized in reverse).
func (TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	tols := d.(*preScoreState).tolerations
	var n int64
	taints := node.Taints()
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectPreferNoSchedule && !framework.Tolerates(tols, &taints[i]) {
			n++
		}
	}
	return n, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (p TaintToleration) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions.
func (TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.NormalizeScores(scores, true)
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (TaintToleration) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}}
}
