package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Selector is a label selector that matches matchLabels (and
// matchLabelKeys) with one map lookup per label. Affinity and spreading
// match every incoming pod's selectors against every placed pod, so the
// generic labels.Selector (two lookups and a set per requirement) is left
// for matchExpressions.
type Selector struct {
	nothing bool
	equal   []labelPair
	// rest holds the other requirements; nil when there are none.
	rest labels.Selector
}

type labelPair struct{ key, value string }

// NewSelector parses a label selector. As in Kubernetes, a nil selector
// matches nothing and an empty one everything.
func NewSelector(ls *metav1.LabelSelector) (Selector, error) {
	if ls == nil {
		return Selector{nothing: true}, nil
	}
	// Parse the whole selector once for its validation errors.
	if _, err := metav1.LabelSelectorAsSelector(ls); err != nil {
		return Selector{}, err
	}
	var s Selector
	for k, v := range ls.MatchLabels {
		s.equal = append(s.equal, labelPair{k, v})
	}
	if len(ls.MatchExpressions) > 0 {
		rest, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: ls.MatchExpressions})
		if err != nil {
			return Selector{}, err
		}
		s.rest = rest
	}
	return s, nil
}

// Matches reports whether labels l are selected.
func (s *Selector) Matches(l map[string]string) bool {
	if s.nothing {
		return false
	}
	for _, p := range s.equal {
		if v, ok := l[p.key]; !ok || v != p.value {
			return false
		}
	}
	return s.rest == nil || s.rest.Matches(labels.Set(l))
}

// WithLabelKeys narrows s with one requirement per key the pod carries:
// "key op (the pod's value)". It implements matchLabelKeys (op In: only
// pods of the same revision, say) and mismatchLabelKeys (op NotIn). Keys
// the pod lacks are ignored, as Kubernetes does.
func (s Selector) WithLabelKeys(pod *v1.Pod, keys []string, op selection.Operator) (Selector, error) {
	if s.nothing {
		return s, nil
	}
	s.equal = append([]labelPair(nil), s.equal...)
	for _, k := range keys {
		v, ok := pod.Labels[k]
		if !ok {
			continue
		}
		if op == selection.In || op == selection.Equals {
			s.equal = append(s.equal, labelPair{k, v})
			continue
		}
		r, err := labels.NewRequirement(k, op, []string{v})
		if err != nil {
			return Selector{}, fmt.Errorf("framework: pod %s/%s: label key %q: %w", pod.Namespace, pod.Name, k, err)
		}
		if s.rest == nil {
			s.rest = labels.NewSelector()
		}
		s.rest = s.rest.Add(*r)
	}
	return s, nil
}
