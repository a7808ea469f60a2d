// Package interpodaffinity places pods relative to other pods: required
// affinity (only where matching pods run, per topology domain), required
// anti-affinity (not where they run), the existing pods' anti-affinity
// against the incoming pod, and preferred terms of both sides for
// scoring.
//
// Counts are kept per topology pair (key, value): for example a pod with
// anti-affinity {app=db, topologyKey zone} sees pair (zone, a) = 2 when
// two db pods run in zone a, and every node of zone a is rejected.
package interpodaffinity

import (
	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Kubernetes' wording.
const (
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// hardPodAffinityWeight is the score an existing pod's required affinity
// term gives the nodes it would accept the incoming pod on.
const hardPodAffinityWeight = 1

// InterPodAffinity is the plugin.
type InterPodAffinity struct {
	h framework.Handle
}

var (
	_ framework.PreFilterPlugin     = (*InterPodAffinity)(nil)
	_ framework.PreFilterExtensions = (*InterPodAffinity)(nil)
	_ framework.FilterPlugin        = (*InterPodAffinity)(nil)
	_ framework.PreScorePlugin      = (*InterPodAffinity)(nil)
	_ framework.ScorePlugin         = (*InterPodAffinity)(nil)
	_ framework.EnqueueExtensions   = (*InterPodAffinity)(nil)
)

// New is the plugin's factory.
func New(h framework.Handle) (framework.Plugin, error) { return &InterPodAffinity{h: h}, nil }

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return names.InterPodAffinity }

// EventsToRegister implements framework.EnqueueExtensions.
func (*InterPodAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.AssignedPod, ActionType: framework.All},
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel},
	}
}

type topologyPair struct {
	key, value string
}

// termMatches matches p against t, looking up p's namespace labels only
// when the term's namespace selector needs them.
func (pl *InterPodAffinity) termMatches(t *framework.AffinityTerm, p *v1.Pod) bool {
	var nsLabels labels.Set
	if t.NamespaceSelector != nil && !t.Namespaces.Has(p.Namespace) {
		nsLabels = pl.h.NamespaceLabels(p.Namespace)
	}
	return t.Matches(p, nsLabels)
}

func (pl *InterPodAffinity) matchesAll(terms []framework.AffinityTerm, p *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !pl.termMatches(&terms[i], p) {
			return false
		}
	}
	return true
}
