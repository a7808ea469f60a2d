// Package podtopologyspread spreads pods that match a selector evenly
// across topology domains (zones, nodes...). DoNotSchedule constraints
// filter: placing the pod must not make the difference between its domain
// and the emptiest eligible domain exceed maxSkew. ScheduleAnyway
// constraints score: domains with fewer matching pods score higher.
//
// Worked example (DoNotSchedule, maxSkew 1, topologyKey zone): zone a
// has 2 matching pods, b has 1, c has 1. Global minimum 1. Placing in a
// gives skew 2+1-1 = 2 > 1: rejected; b or c give 1+1-1 = 1: accepted.
package podtopologyspread

import (
	"fmt"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
)

// Kubernetes' wording.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// constraint is a topology spread constraint with its selector parsed
// and its policies defaulted.
type constraint struct {
	maxSkew       int32
	topologyKey   string
	selector      framework.Selector
	minDomains    int32
	honorAffinity bool
	honorTaints   bool
}

func buildConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := framework.NewSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("podtopologyspread: pod %s/%s: label selector: %w", pod.Namespace, pod.Name, err)
		}
		if sel, err = sel.WithLabelKeys(pod, c.MatchLabelKeys, selection.In); err != nil {
			return nil, err
		}
		k := constraint{maxSkew: c.MaxSkew, topologyKey: c.TopologyKey, selector: sel, minDomains: 1,
			honorAffinity: true}
		if c.MinDomains != nil {
			k.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			k.honorAffinity = *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor
		}
		if c.NodeTaintsPolicy != nil {
			k.honorTaints = *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor
		}
		out = append(out, k)
	}
	return out, nil
}

// eligible reports whether node's domain counts for the constraint,
// given the inclusion policies.
func (c *constraint) eligible(pod *framework.PodInfo, node *v1.Node) bool {
	if c.honorAffinity && pod.HasNodeAffinity() {
		if ok, _ := pod.NodeAffinity.Match(node); !ok {
			return false
		}
	}
	if c.honorTaints {
		for i := range node.Spec.Taints {
			t := &node.Spec.Taints[i]
			if (t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute) &&
				!framework.Tolerates(pod.Pod.Spec.Tolerations, t) {
				return false
			}
		}
	}
	return true
}

// hasAllKeys reports whether node carries every constraint's topology
// key; nodes that do not are not part of any domain.
func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods on a node that the constraint selects:
// same namespace, not terminating.
func countMatching(pods []*framework.PodInfo, sel *framework.Selector, ns string) int {
	n := 0
	for _, p := range pods {
		if p.Pod.Namespace == ns && p.Pod.DeletionTimestamp == nil && sel.Matches(p.Pod.Labels) {
			n++
		}
	}
	return n
}
