package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

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

// sync converges one DaemonSet: place and remove pods per node, roll
// updates out, and write the status.
func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := dc.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		dc.exp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	ds := cached.DeepCopy()
	nodes, err := dc.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	if reflect.DeepEqual(ds.Spec.Selector, &metav1.LabelSelector{}) {
		dc.recorder.Eventf(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		return nil
	}
	cur, old, err := dc.constructHistory(ctx, ds)
	if err != nil {
		return fmt.Errorf("daemonset: the revisions of %s: %w", key, err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if !dc.exp.Satisfied(key) {
		// Only the status: the generation was not acted upon.
		return dc.updateStatus(ctx, ds, nodes, hash, false)
	}
	err = dc.manage(ctx, ds, nodes, hash)
	if err == nil && dc.exp.Satisfied(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		err = dc.rollingUpdate(ctx, ds, nodes, hash)
	}
	if err == nil {
		err = dc.cleanupHistory(ctx, ds, old)
	}
	statusErr := dc.updateStatus(ctx, ds, nodes, hash, true)
	return errors.Join(err, statusErr)
}

// nodesToPods returns ds's pods by the node they are for, after adoption
// and release. Finished pods already being deleted are left out unless
// withDeletedTerminal: nothing more is to be done with them.
func (dc *Controller) nodesToPods(ctx context.Context, ds *appsv1.DaemonSet, withDeletedTerminal bool) (map[string][]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("daemonset: %s/%s has an invalid selector: %w", ds.Namespace, ds.Name, err)
	}
	candidates, err := controllerref.Candidates[*corev1.Pod](dc.podIndex, ds.Namespace, string(ds.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: ds, Kind: kind, Match: controllerref.SelectorMatch(sel),
		CanAdopt: controllerref.RecheckDeletionTimestamp(ds.UID, func(ctx context.Context) (metav1.Object, error) {
			return dc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}),
	}
	pods, err := controllerref.ClaimPods(ctx, m, dc.client, candidates)
	if err != nil {
		return nil, err
	}
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if !withDeletedTerminal && podutil.IsTerminal(p) && p.DeletionTimestamp != nil {
			continue
		}
		node, err := targetNode(p)
		if err != nil {
			continue
		}
		out[node] = append(out[node], p)
	}
	return out, nil
}

// manage creates the pods missing on nodes that should run ds and deletes
// those on nodes that should not, failed ones, and duplicates.
func (dc *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := dc.nodesToPods(ctx, ds, false)
	if err != nil {
		return err
	}
	var create []string
	var del []*corev1.Pod
	for _, n := range nodes {
		c, d := dc.podsShouldBeOnNode(n, byNode, ds, hash)
		create = append(create, c...)
		del = append(del, d...)
	}
	// Unbound pods for nodes that no longer exist would never be bound.
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				del = append(del, p)
			}
		}
	}
	return dc.syncNodes(ctx, ds, del, create, hash)
}

// podsShouldBeOnNode decides for one node: the node to create a pod on (if
// any) and the pods to delete.
func (dc *Controller) podsShouldBeOnNode(node *corev1.Node, byNode map[string][]*corev1.Pod, ds *appsv1.DaemonSet, hash string) (create []string, del []*corev1.Pod) {
	run, keep := shouldRun(node, ds)
	pods, exists := byNode[node.Name]
	switch {
	case run && !exists:
		create = append(create, node.Name)
	case keep:
		var running []*corev1.Pod
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed:
				backoffKey := ds.Namespace + "/" + ds.Name + "/" + node.Name
				now := dc.clock.Now()
				if dc.failedBackoff.IsInBackOffSinceUpdate(backoffKey, now) {
					dc.enqueueAfter(ds, dc.failedBackoff.Get(backoffKey))
					continue
				}
				dc.failedBackoff.Next(backoffKey, now)
				dc.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod",
					"Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node.Name)
				del = append(del, p)
			case p.Status.Phase == corev1.PodSucceeded:
				del = append(del, p)
			default:
				running = append(running, p)
			}
		}
		if !allowsSurge(ds) {
			// Without surge a node runs one pod: keep the oldest.
			if len(running) > 1 {
				byAge(running)
				del = append(del, running[1:]...)
			}
			break
		}
		if len(running) <= 1 {
			if len(running) == 0 && run {
				create = append(create, node.Name)
			}
			break
		}
		// With surge a node may run an old and a new pod while the new one
		// becomes available; any other pod goes.
		byAge(running)
		var oldestNew, oldestOld *corev1.Pod
		for _, p := range running {
			switch {
			case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash && oldestNew == nil:
				oldestNew = p
			case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash && oldestOld == nil:
				oldestOld = p
			default:
				del = append(del, p)
			}
		}
		if oldestNew != nil && oldestOld != nil &&
			(!podutil.IsReady(oldestOld) || podutil.IsAvailable(oldestNew, ds.Spec.MinReadySeconds, dc.clock.Now())) {
			del = append(del, oldestOld)
		}
	case !keep && exists:
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				del = append(del, p)
			}
		}
	}
	return create, del
}

// byAge orders pods oldest first, then by phase (running before pending).
func byAge(pods []*corev1.Pod) {
	rank := map[corev1.PodPhase]int{corev1.PodRunning: 0, corev1.PodPending: 1}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		ra, oka := rank[a.Status.Phase]
		rb, okb := rank[b.Status.Phase]
		if !oka {
			ra = 2
		}
		if !okb {
			rb = 2
		}
		return ra < rb
	})
}

func allowsSurge(ds *appsv1.DaemonSet) bool {
	s, err := surgeCount(ds, 1)
	return err == nil && s > 0
}

// syncNodes deletes del and creates one pod for each node of create, at
// most BurstReplicas of each, in slow-start batches.
func (dc *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, del []*corev1.Pod, create []string, hash string) error {
	key, _ := cache.MetaNamespaceKeyFunc(ds)
	create = create[:min(len(create), BurstReplicas)]
	del = del[:min(len(del), BurstReplicas)]
	delKeys := make([]string, len(del))
	for i, p := range del {
		delKeys[i] = expectations.PodKey(p.Namespace, p.Name)
	}
	dc.exp.Expect(key, len(create), delKeys)

	var errs []error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	tmpl := podTemplate(ds, hash)
	ref := metav1.NewControllerRef(ds, kind)
	next := make(chan string, len(create))
	for _, n := range create {
		next <- n
	}
	close(next)
	ok, err := podcontrol.SlowStartBatch(len(create), podcontrol.SlowStartInitialBatchSize, func() error {
		node := <-next
		t := tmpl.DeepCopy()
		t.Spec.Affinity = pinToNode(t.Spec.Affinity, node)
		_, err := dc.pods.Create(ctx, podcontrol.FromTemplate(t, ds, ref), ds)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	})
	dc.exp.LowerCreations(key, len(create)-ok)
	if err != nil {
		fail(err)
	}

	var wg sync.WaitGroup
	for _, p := range del {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := dc.pods.Delete(ctx, p.Namespace, p.Name, ds); err != nil {
				dc.exp.DeletionObserved(key, expectations.PodKey(p.Namespace, p.Name))
				if !apierrors.IsNotFound(err) {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
