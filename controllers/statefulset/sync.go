package statefulset

import (
	"context"
	"errors"
	"sort"
	"time"

	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/podcontrol"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// sync converges one StatefulSet.
func (sc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := sc.setLister.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	set := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		sc.recorder.Eventf(set, corev1.EventTypeWarning, "InvalidSelector", "invalid or empty selector %v", set.Spec.Selector)
		return nil
	}
	history, err := sc.claimRevisions(ctx, set, sel)
	if err != nil {
		return err
	}
	pods, err := sc.claimPods(ctx, set, sel)
	if err != nil {
		return err
	}
	if history, set, err = sc.migrateLegacyRevision(ctx, set, history); err != nil {
		return err
	}
	cur, upd, collisions, err := sc.revisions(ctx, set, history)
	if err != nil {
		return err
	}
	if set.Status.CurrentRevision != "" && cur.name != set.Status.CurrentRevision {
		sc.log.Warn("the current revision is gone; pods move to the update revision",
			"statefulset", key, "currentRevision", set.Status.CurrentRevision, "updateRevision", upd.name)
	}
	status, syncErr := sc.update(ctx, set, cur, upd, collisions, pods)
	statusErr := sc.writeStatus(ctx, set, status)
	// The history is trimmed whatever happened, as Kubernetes does.
	historyErr := sc.truncateHistory(ctx, set, pods, history, cur, upd)
	if err := errors.Join(syncErr, statusErr, historyErr); err != nil {
		return err
	}
	if set.Spec.MinReadySeconds > 0 && status.AvailableReplicas != *set.Spec.Replicas {
		sc.enqueueAfter(set, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// claimPods returns set's pods, terminating ones included (they hold
// their names), after adoption and release. Only pods named as the set's
// may be adopted.
func (sc *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	candidates, err := controllerref.Candidates[*corev1.Pod](sc.podIndex, set.Namespace, string(set.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: set, Kind: kind,
		Match: func(o metav1.Object) bool {
			pod := o.(*corev1.Pod)
			return sel.Matches(labels.Set(pod.Labels)) && isMemberOf(set, pod)
		},
		CanAdopt: controllerref.RecheckDeletionTimestamp(set.UID, func(ctx context.Context) (metav1.Object, error) {
			return sc.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}),
	}
	return controllerref.ClaimPods(ctx, m, sc.client, candidates)
}

// update makes one pass over set's pods: replace finished pods, create
// missing ones, fix identities, remove pods beyond the replicas, and
// replace one pod of an old revision. OrderedReady waits for each pod to
// be running and ready (and available) before touching the next; Parallel
// does not. It returns the status seen.
func (sc *Controller) update(ctx context.Context, set *appsv1.StatefulSet, cur, upd revision, collisions int32, pods []*corev1.Pod) (appsv1.StatefulSetStatus, error) {
	now := sc.clock.Now()
	status := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation, CurrentRevision: cur.name, UpdateRevision: upd.name,
		CollisionCount: &collisions,
	}
	countPods(&status, set.Spec.MinReadySeconds, now, cur, upd, pods)

	start, n := startOrdinal(set), int(*set.Spec.Replicas)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range pods {
		switch o := ordinal(p); {
		case o >= start && o < start+n:
			replicas[o-start] = p
		case o >= 0:
			condemned = append(condemned, p)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = sc.newVersionedPod(set, cur, upd, start+i)
		}
	}
	sort.Slice(condemned, func(i, j int) bool { return ordinal(condemned[i]) < ordinal(condemned[j]) })
	var firstUnhealthy *corev1.Pod
	for _, p := range append(append([]*corev1.Pod(nil), replicas...), condemned...) {
		if !isHealthy(p) {
			firstUnhealthy = p
			break
		}
	}
	if set.DeletionTimestamp != nil {
		return status, nil
	}
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	recount := func() {
		countPods(&status, set.Spec.MinReadySeconds, now, cur, upd, append(append([]*corev1.Pod(nil), replicas...), condemned...))
	}

	exit, err := forAll(len(replicas), false, monotonic, func(i int) (bool, error) {
		return sc.processReplica(ctx, set, cur, upd, replicas, i, monotonic, now)
	})
	if exit || err != nil {
		recount()
		return status, err
	}
	exit, err = forAll(len(condemned), true, monotonic, func(i int) (bool, error) {
		return sc.processCondemned(ctx, set, condemned[i], firstUnhealthy, monotonic, now)
	})
	recount()
	if exit || err != nil {
		return status, err
	}
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return status, nil
	}
	// Replace the highest pod not at the update revision, down to the
	// partition, one at a time and only over healthy pods.
	updateMin := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	for target := len(replicas) - 1; target >= updateMin; target-- {
		p := replicas[target]
		if podRevision(p) != upd.name && !isTerminating(p) {
			if isCreated(p) {
				if err := sc.deleteStatefulPod(ctx, set, p); err != nil {
					return status, err
				}
			}
			status.CurrentReplicas--
			return status, nil
		}
		if !isHealthy(p) {
			return status, nil
		}
	}
	return status, nil
}

// forAll runs fn over n items, in order (or in reverse), stopping at the
// first that asks to when monotonic; otherwise over all of them in slow
// start batches, stopping at the first error.
func forAll(n int, reverse, monotonic bool, fn func(i int) (bool, error)) (bool, error) {
	idx := func(i int) int {
		if reverse {
			return n - 1 - i
		}
		return i
	}
	if monotonic {
		for i := range n {
			if exit, err := fn(idx(i)); exit || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	next := make(chan int, n)
	for i := range n {
		next <- idx(i)
	}
	close(next)
	_, err := podcontrol.SlowStartBatch(n, podcontrol.SlowStartInitialBatchSize, func() error {
		_, err := fn(<-next)
		return err
	})
	return err != nil, err
}

// newVersionedPod builds the pod of ordinal at the current revision when
// it lies below the partition, else at the update revision.
func (sc *Controller) newVersionedPod(set *appsv1.StatefulSet, cur, upd revision, ordinal int) *corev1.Pod {
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		ru := set.Spec.UpdateStrategy.RollingUpdate
		below := false
		if ru != nil && ru.Partition != nil {
			below = ordinal < startOrdinal(set)+int(*ru.Partition)
		} else if ru == nil {
			below = ordinal < startOrdinal(set)+int(set.Status.CurrentReplicas)
		}
		if below {
			return newPod(set, cur.template, cur.name, ordinal)
		}
	}
	return newPod(set, upd.template, upd.name, ordinal)
}

// processReplica handles the pod of replicas[i]; it reports whether the
// pass must stop there.
func (sc *Controller) processReplica(ctx context.Context, set *appsv1.StatefulSet, cur, upd revision, replicas []*corev1.Pod, i int, monotonic bool, now time.Time) (bool, error) {
	p := replicas[i]
	if isFailed(p) || isSucceeded(p) {
		// Replaced on a later sync, once this one is gone.
		if p.DeletionTimestamp == nil {
			if err := sc.deleteStatefulPod(ctx, set, p); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if !isCreated(p) {
		if err := sc.createStatefulPod(ctx, set, p); err != nil {
			return true, err
		}
		return monotonic, nil
	}
	if isPending(p) {
		if err := sc.createClaims(ctx, set, p); err != nil {
			return true, err
		}
	}
	if monotonic && (isTerminating(p) || !isRunningAndReady(p) || !isRunningAndAvailable(p, set.Spec.MinReadySeconds, now)) {
		return true, nil
	}
	if identityMatches(set, p) {
		return false, nil
	}
	if err := sc.fixIdentity(ctx, set, p); err != nil {
		return true, err
	}
	return false, nil
}

// processCondemned removes a pod beyond the replicas. OrderedReady removes
// one at a time, highest first, and only while the others are healthy
// (the first unhealthy pod itself may go).
func (sc *Controller) processCondemned(ctx context.Context, set *appsv1.StatefulSet, p, firstUnhealthy *corev1.Pod, monotonic bool, now time.Time) (bool, error) {
	if isTerminating(p) {
		return monotonic, nil
	}
	if monotonic && p != firstUnhealthy &&
		(!isRunningAndReady(p) || !isRunningAndAvailable(p, set.Spec.MinReadySeconds, now)) {
		return true, nil
	}
	return true, sc.deleteStatefulPod(ctx, set, p)
}

// countPods fills the replica counts of status from pods.
func countPods(status *appsv1.StatefulSetStatus, minReadySeconds int32, now time.Time, cur, upd revision, pods []*corev1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	status.CurrentReplicas, status.UpdatedReplicas = 0, 0
	for _, p := range pods {
		if isCreated(p) {
			status.Replicas++
		}
		if isRunningAndReady(p) {
			status.ReadyReplicas++
			if isRunningAndAvailable(p, minReadySeconds, now) {
				status.AvailableReplicas++
			}
		}
		if isCreated(p) && !isTerminating(p) {
			if podRevision(p) == cur.name {
				status.CurrentReplicas++
			}
			if podRevision(p) == upd.name {
				status.UpdatedReplicas++
			}
		}
	}
}

// writeStatus completes a finished rolling update (the update revision
// becomes current) and writes the status if it changed.
func (sc *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
	if apiequality.Semantic.DeepEqual(set.Status, st) {
		return nil
	}
	set.Status = st
	_, err := sc.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
	return err
}
