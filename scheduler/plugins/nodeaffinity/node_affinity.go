// Package nodeaffinity places pods on nodes their nodeSelector and
// required node affinity match, and prefers nodes their preferred node
// affinity terms match.
package nodeaffinity

import (
	"context"
	"fmt"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ErrReason is Kubernetes' wording.
const ErrReason = "node(s) didn't match Pod's node affinity/selector"

const stateKey framework.StateKey = names.NodeAffinity

// NodeAffinity is the plugin.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin   = NodeAffinity{}
	_ framework.FilterPlugin      = NodeAffinity{}
	_ framework.PreScorePlugin    = NodeAffinity{}
	_ framework.ScorePlugin       = NodeAffinity{}
	_ framework.EnqueueExtensions = NodeAffinity{}
)

// New is the plugin's factory.
func New(framework.Handle) (framework.Plugin, error) { return NodeAffinity{}, nil }

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return names.NodeAffinity }

// PreFilter implements framework.PreFilterPlugin: pods without a node
// selector or required node affinity skip the filter.
func (NodeAffinity) PreFilter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo) (*framework.PreFilterResult, *framework.Status) {
	if !pod.HasNodeAffinity() {
		return nil, framework.NewStatus(framework.Skip)
	}
	return nil, nil
}

// Filter implements framework.FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	ok, err := pod.NodeAffinity.Match(node.Node())
	if err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("invalid node affinity: %v", err))
	}
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

type preScoreState struct {
	terms *nodeaffinity.PreferredSchedulingTerms
}

// Clone implements framework.StateData.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin: it parses the preferred
// terms once; pods without any skip scoring.
func (NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *framework.PodInfo, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("nodeaffinity: %w", err))
	}
	state.Write(stateKey, &preScoreState{terms: terms})
	return nil
}

// Score implements framework.ScorePlugin: the sum of the weights of the
// preferred terms the node matches.
func (NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *framework.PodInfo, node *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	return d.(*preScoreState).terms.Score(node.Node()), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (p NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore implements framework.ScoreExtensions.
func (NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, scores []framework.NodeScore) *framework.Status {
	framework.NormalizeScores(scores, false)
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (NodeAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}}
}
