package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/expectations"
	"cairn/controllers/internal/podcontrol"
	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// sync converges one ReplicaSet: claim its pods, create or delete pods
// when its expectations are met, and write its status.
func (rc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := rc.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		rc.exp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	needsSync := rc.exp.Satisfied(key)
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Validation forbids this; nothing to do until the object changes.
		rc.log.Error("invalid selector", "replicaset", key, "err", err)
		return nil
	}
	pods, err := rc.claimPods(ctx, rs, sel)
	if err != nil {
		return err
	}
	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = rc.manageReplicas(ctx, pods, rs)
	}
	status := calculateStatus(rs, pods, manageErr, rc.clock.Now())
	updated, err := rc.updateStatus(ctx, rs.DeepCopy(), status)
	if err != nil {
		return err
	}
	// Come back when the ready pods become available.
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == *updated.Spec.Replicas &&
		updated.Status.AvailableReplicas != *updated.Spec.Replicas {
		rc.enqueueAfter(updated, secondsDuration(updated.Spec.MinReadySeconds))
	}
	return manageErr
}

// claimPods returns the active pods rs owns after adoption and release.
func (rc *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, sel labels.Selector) ([]*corev1.Pod, error) {
	candidates, err := controllerref.Candidates[*corev1.Pod](rc.podIndex, rs.Namespace, string(rs.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: rs, Kind: kind, Match: controllerref.SelectorMatch(sel),
		CanAdopt: controllerref.RecheckDeletionTimestamp(rs.UID, func(ctx context.Context) (metav1.Object, error) {
			return rc.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		}),
	}
	return controllerref.ClaimPods(ctx, m, rc.client, podutil.FilterActive(candidates))
}

// manageReplicas creates or deletes pods so that rs has spec.replicas
// active pods, at most BurstReplicas at a time.
func (rc *Controller) manageReplicas(ctx context.Context, pods []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	key, _ := cacheKey(rs)
	diff := len(pods) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		n := min(-diff, BurstReplicas)
		// Expect them before asking, so that their events cannot race
		// ahead of the expectation.
		rc.exp.ExpectCreations(key, n)
		ref := metav1.NewControllerRef(rs, kind)
		ok, err := podcontrol.SlowStartBatch(n, podcontrol.SlowStartInitialBatchSize, func() error {
			_, err := rc.pods.Create(ctx, podcontrol.FromTemplate(&rs.Spec.Template, rs, ref), rs)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// Every later create fails the same way, and the
				// ReplicaSet goes with its namespace.
				return nil
			}
			return err
		})
		// No event will ever come for the pods that failed or that were
		// never attempted.
		rc.exp.LowerCreations(key, n-ok)
		return err
	case diff > 0:
		n := min(diff, BurstReplicas)
		related, err := rc.relatedPods(rs)
		if err != nil {
			return err
		}
		victims := podsToDelete(pods, related, n, rc.clock.Now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = expectations.PodKey(p.Namespace, p.Name)
		}
		rc.exp.ExpectDeletions(key, keys)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rc.pods.Delete(ctx, p.Namespace, p.Name, rs); err != nil {
					rc.exp.DeletionObserved(key, expectations.PodKey(p.Namespace, p.Name))
					if !apierrors.IsNotFound(err) {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return errors.Join(collect(errs)...)
	}
	return nil
}

func collect(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// relatedPods returns the active pods of rs and of the ReplicaSets that
// share its controller (a Deployment's other revisions): deleting a pod
// from a node crowded with its siblings spreads them better.
func (rc *Controller) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	owners := []string{string(rs.UID)}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		siblings, err := controllerref.Owned[*appsv1.ReplicaSet](rc.rsIndex, string(ref.UID))
		if err != nil {
			return nil, err
		}
		owners = owners[:0]
		for _, s := range siblings {
			owners = append(owners, string(s.UID))
		}
	}
	var out []*corev1.Pod
	for _, uid := range owners {
		pods, err := controllerref.Owned[*corev1.Pod](rc.podIndex, uid)
		if err != nil {
			return nil, err
		}
		out = append(out, podutil.FilterActive(pods)...)
	}
	return out, nil
}

// podsToDelete picks n of pods to delete, the least established first
// (see podutil.Ranked), ranking pods by how many related pods share their
// node.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		onNode[p.Spec.NodeName]++
	}
	sorted := append([]*corev1.Pod(nil), pods...)
	ranks := make([]int, len(sorted))
	for i, p := range sorted {
		ranks[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(podutil.Ranked{Pods: sorted, Rank: ranks, Now: now})
	return sorted[:n]
}

func cacheKey(obj any) (string, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", fmt.Errorf("replicaset: %w", err)
	}
	return key, nil
}
