package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Tolerates reports whether any of tolerations tolerates taint. An empty
// key with operator Exists tolerates every taint; an empty effect
// matches every effect.
func Tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if toleratesOne(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

func toleratesOne(t *v1.Toleration, taint *v1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case v1.TolerationOpExists:
		return true
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	}
	return false
}

// NormalizeScores rescales scores so the highest becomes MaxNodeScore;
// with reverse, the lowest raw score gets MaxNodeScore instead (for
// counts of bad things, such as untolerated soft taints). All-zero
// scores become 0, or MaxNodeScore with reverse.
func NormalizeScores(scores []NodeScore, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = MaxNodeScore
			}
		}
		return
	}
	for i := range scores {
		s := scores[i].Score * MaxNodeScore / highest
		if reverse {
			s = MaxNodeScore - s
		}
		scores[i].Score = s
	}
}

// PodPriority is spec.priority, 0 when unset.
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
