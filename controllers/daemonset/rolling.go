package daemonset

import (
	"context"
	"sort"

	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// unavailableCount is how many of desired nodes may lack an available
// pod during a rolling update (rounded up, as Kubernetes does for
// DaemonSets).
func unavailableCount(ds *appsv1.DaemonSet, desired int) (int, error) {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0, nil
	}
	v := ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable
	if v == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(v, desired, true)
}

// surgeCount is how many nodes may run an extra, new pod at once.
func surgeCount(ds *appsv1.DaemonSet, desired int) (int, error) {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0, nil
	}
	v := ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge
	if v == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(v, desired, true)
}

// updatedPodsOnNode splits a node's live pods into the new and the old
// one; ok is false when there are more than one of either, which manage
// cleans up first.
func updatedPodsOnNode(pods []*corev1.Pod, rev revisionTarget) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if rev.matches(p) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// rollingUpdate replaces old pods. Without surge it deletes just enough
// old available pods to stay within maxUnavailable, and manage creates
// their replacements; with surge it creates new pods beside old available
// ones, up to maxSurge at once, and deletes each old pod once its new
// neighbour is available.
func (dc *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := dc.nodesToPods(ctx, ds, false)
	if err != nil {
		return err
	}
	desired := 0
	nodeByName := map[string]*corev1.Node{}
	for _, n := range nodes {
		nodeByName[n.Name] = n
		if run, _ := shouldRun(n, ds); run {
			desired++
			if _, ok := byNode[n.Name]; !ok {
				byNode[n.Name] = nil
			}
		}
	}
	maxUnavailable, err := unavailableCount(ds, desired)
	if err != nil {
		return err
	}
	maxSurge, err := surgeCount(ds, desired)
	if err != nil {
		return err
	}
	if desired > 0 && maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	now := dc.clock.Now()
	available := func(p *corev1.Pod) bool { return podutil.IsAvailable(p, ds.Spec.MinReadySeconds, now) }
	if maxSurge == 0 {
		return dc.syncNodes(ctx, ds, oldPodsToDelete(byNode, targetOf(ds, hash), maxUnavailable, available), nil, hash)
	}
	del, create := surgeReplacements(byNode, nodeByName, ds, targetOf(ds, hash), maxSurge, desired, available)
	return dc.syncNodes(ctx, ds, del, create, hash)
}

// oldPodsToDelete picks, without surge, the old pods to delete now: every
// old pod that is not available anyway, and available old pods while the
// unavailable nodes stay within maxUnavailable.
func oldPodsToDelete(byNode map[string][]*corev1.Pod, rev revisionTarget, maxUnavailable int, available func(*corev1.Pod) bool) []*corev1.Pod {
	unavailable := 0
	var replace, candidates []*corev1.Pod
	for _, node := range sortedNodes(byNode) {
		newPod, oldPod, ok := updatedPodsOnNode(byNode[node], rev)
		switch {
		case !ok:
			unavailable++
		case oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
			unavailable++
		case newPod != nil:
			if !available(newPod) {
				unavailable++
			}
		case !available(oldPod):
			replace = append(replace, oldPod)
			unavailable++
		case unavailable < maxUnavailable:
			candidates = append(candidates, oldPod)
		}
	}
	room := min(max(maxUnavailable-unavailable, 0), len(candidates))
	return append(replace, candidates[:room]...)
}

// surgeReplacements picks, with surge, the old pods to delete and the
// nodes to start a new pod on.
func surgeReplacements(byNode map[string][]*corev1.Pod, nodes map[string]*corev1.Node, ds *appsv1.DaemonSet, rev revisionTarget,
	maxSurge, desired int, available func(*corev1.Pod) bool) (del []*corev1.Pod, create []string) {
	surging, availableNodes := 0, 0
	var shouldNotRun []*corev1.Pod
	var allowed, candidates []string
	for _, name := range sortedNodes(byNode) {
		newPod, oldPod, ok := updatedPodsOnNode(byNode[name], rev)
		if !ok {
			surging++
			continue
		}
		if (oldPod != nil && available(oldPod)) || (oldPod == nil && newPod != nil && available(newPod)) {
			availableNodes++
		}
		switch {
		case oldPod == nil:
		case newPod == nil:
			run := false
			if n := nodes[name]; n != nil {
				run, _ = shouldRun(n, ds)
			}
			switch {
			case !available(oldPod) && !run:
				del = append(del, oldPod)
			case !available(oldPod):
				allowed = append(allowed, name)
			case !run:
				shouldNotRun = append(shouldNotRun, oldPod)
			case surging < maxSurge:
				candidates = append(candidates, name)
			}
		default:
			if !available(newPod) {
				surging++
				continue
			}
			del = append(del, oldPod)
		}
	}
	// Pods on nodes that no longer qualify go only once as many pods are
	// available elsewhere as desired.
	if spare := availableNodes - desired; spare > 0 {
		del = append(del, shouldNotRun[:min(spare, len(shouldNotRun))]...)
	}
	room := min(max(maxSurge-surging, 0), len(candidates))
	return del, append(allowed, candidates[:room]...)
}

// sortedNodes returns byNode's keys in order, so that decisions do not
// depend on map order.
func sortedNodes(byNode map[string][]*corev1.Pod) []string {
	out := make([]string, 0, len(byNode))
	for n := range byNode {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
