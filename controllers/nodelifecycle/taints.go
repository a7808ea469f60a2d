package nodelifecycle

import (
	"context"
	"fmt"
	"slices"

	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// unreachableTaint is put on a node whose Ready condition is Unknown;
// pods that do not tolerate it are evicted.
func unreachableTaint() corev1.Taint {
	return corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
}

// notReadyTaint is put on a node whose Ready condition is False.
func notReadyTaint() corev1.Taint {
	return corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
}

// isConditionTaintKey reports whether key is one of the NoSchedule taints
// kept in line with node conditions (Kubernetes' TaintNodesByCondition);
// the controller never touches a NoSchedule taint of another key.
func isConditionTaintKey(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
		corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable:
		return true
	}
	return false
}

// conditionTaints returns the NoSchedule taints node's conditions and
// spec call for.
func conditionTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	add := func(key string) {
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
	for _, c := range node.Status.Conditions {
		switch {
		case c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse:
			add(corev1.TaintNodeNotReady)
		case c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown:
			add(corev1.TaintNodeUnreachable)
		case c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue:
			add(corev1.TaintNodeMemoryPressure)
		case c.Type == corev1.NodeDiskPressure && c.Status == corev1.ConditionTrue:
			add(corev1.TaintNodeDiskPressure)
		case c.Type == corev1.NodePIDPressure && c.Status == corev1.ConditionTrue:
			add(corev1.TaintNodePIDPressure)
		case c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue:
			add(corev1.TaintNodeNetworkUnavailable)
		}
	}
	if node.Spec.Unschedulable {
		add(corev1.TaintNodeUnschedulable)
	}
	return out
}

// managedConditionTaints returns node's NoSchedule taints of the keys
// conditionTaints manages.
func managedConditionTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && isConditionTaintKey(t.Key) {
			out = append(out, corev1.Taint{Key: t.Key, Effect: t.Effect})
		}
	}
	return out
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, sameTaint(t))
}

// sameTaint matches taints of t's key and effect, whatever their value
// and time.
func sameTaint(t corev1.Taint) func(corev1.Taint) bool {
	return func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect }
}

// withTaints returns taints with add added (stamped now, for NoExecute
// ones) and remove removed, and whether that changed anything.
func withTaints(taints, add, remove []corev1.Taint, now metav1.Time) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	changed := false
	for _, t := range taints {
		if slices.ContainsFunc(remove, sameTaint(t)) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, t := range add {
		if slices.ContainsFunc(out, sameTaint(t)) {
			continue
		}
		if t.Effect == corev1.TaintEffectNoExecute {
			t.TimeAdded = &now
		}
		out = append(out, t)
		changed = true
	}
	return out, changed
}

// swapTaints adds and removes taints on the node named name, reading it
// afresh and retrying on conflict, and reports whether it wrote.
func (c *Controller) swapTaints(ctx context.Context, name string, add, remove []corev1.Taint) (bool, error) {
	return c.editTaints(ctx, name, func(*corev1.Node) ([]corev1.Taint, []corev1.Taint) { return add, remove })
}

// editTaints reads the node named name afresh, asks change which taints
// to add and remove given that copy, and writes the result, retrying on
// conflict. It reports whether it wrote.
func (c *Controller) editTaints(ctx context.Context, name string, change func(*corev1.Node) (add, remove []corev1.Taint)) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		add, remove := change(node)
		taints, changed := withTaints(node.Spec.Taints, add, remove, metav1.NewTime(c.clock.Now()))
		if !changed || equality.Semantic.DeepEqual(taints, node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = taints
		_, err = c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		wrote = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("nodelifecycle: updating the taints of node %s: %w", name, err)
	}
	return wrote, nil
}

// noExecuteFor returns the NoExecute taint node's Ready condition calls
// for and the one it replaces; ok is false for a ready (or never
// reported) node, which needs neither.
func noExecuteFor(node *corev1.Node) (want, old corev1.Taint, ok bool) {
	cond := clusterutil.NodeCondition(node, corev1.NodeReady)
	switch {
	case cond == nil:
		return want, old, false
	case cond.Status == corev1.ConditionFalse:
		return notReadyTaint(), unreachableTaint(), true
	case cond.Status == corev1.ConditionUnknown:
		return unreachableTaint(), notReadyTaint(), true
	}
	return want, old, false
}
