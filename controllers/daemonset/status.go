package daemonset

import (
	"context"
	"time"

	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// calculateStatus counts, over nodes: those that should run ds, those that
// do (and are ready, available, updated), and those that run it but
// should not.
func calculateStatus(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, now time.Time) appsv1.DaemonSetStatus {
	var st appsv1.DaemonSetStatus
	for _, n := range nodes {
		run, _ := shouldRun(n, ds)
		pods := byNode[n.Name]
		scheduled := len(pods) > 0
		if !run {
			if scheduled {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if !scheduled {
			continue
		}
		st.CurrentNumberScheduled++
		pods = append([]*corev1.Pod(nil), pods...)
		byAge(pods)
		p := pods[0]
		if podutil.IsReady(p) {
			st.NumberReady++
			if podutil.IsAvailable(p, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if targetOf(ds, hash).matches(p) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st
}

// updateStatus writes ds's counts, and the generation they answer when
// observed is set (not while the controller waits for its own changes).
func (dc *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string, observed bool) error {
	byNode, err := dc.nodesToPods(ctx, ds, true)
	if err != nil {
		return err
	}
	st := calculateStatus(ds, nodes, byNode, hash, dc.clock.Now())
	st.ObservedGeneration = ds.Status.ObservedGeneration
	if observed {
		st.ObservedGeneration = ds.Generation
	}
	st.CollisionCount = ds.Status.CollisionCount
	st.Conditions = ds.Status.Conditions
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		dc.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	if ds.Status.ObservedGeneration == st.ObservedGeneration &&
		ds.Status.DesiredNumberScheduled == st.DesiredNumberScheduled &&
		ds.Status.CurrentNumberScheduled == st.CurrentNumberScheduled &&
		ds.Status.NumberMisscheduled == st.NumberMisscheduled &&
		ds.Status.NumberReady == st.NumberReady &&
		ds.Status.UpdatedNumberScheduled == st.UpdatedNumberScheduled &&
		ds.Status.NumberAvailable == st.NumberAvailable &&
		ds.Status.NumberUnavailable == st.NumberUnavailable {
		return nil
	}
	ds.Status = st
	_, err = dc.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
	return err
}
