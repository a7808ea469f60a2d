package agent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseLabels reads --node-labels: key=value pairs. Labels in the
// node-role.kubernetes.io namespace are refused, as Kubernetes refuses
// a kubelet that sets its own role.
func ParseLabels(items []string) (map[string]string, error) {
	out := map[string]string{}
	for _, it := range items {
		if it == "" {
			continue
		}
		k, v, ok := strings.Cut(it, "=")
		if !ok {
			return nil, fmt.Errorf("agent: node label %q is not key=value", it)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("agent: node label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("agent: node label %q value %q: %s", k, v, strings.Join(errs, "; "))
		}
		if strings.HasPrefix(k, "node-role.kubernetes.io/") || k == "kubernetes.io/role" {
			return nil, fmt.Errorf("agent: node label %q: a node may not set its own role; label it with kubectl", k)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints reads --register-with-taints: key[=value]:Effect items.
func ParseTaints(items []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, it := range items {
		if it == "" {
			continue
		}
		kv, effect, ok := strings.Cut(it, ":")
		if !ok {
			return nil, fmt.Errorf("agent: taint %q is not key[=value]:Effect", it)
		}
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("agent: taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", it, effect)
		}
		k, v, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("agent: taint key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("agent: taint %q value %q: %s", k, v, strings.Join(errs, "; "))
		}
		out = append(out, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}
