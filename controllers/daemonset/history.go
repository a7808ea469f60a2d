package daemonset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"

	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A DaemonSet's history is kept in ControllerRevisions, as Kubernetes
// keeps it, so that `kubectl rollout history` and `kubectl rollout undo`
// work: one revision per template the DaemonSet has had, named
// <daemonset>-<hash> where hash is the pod template hash its pods carry
// in their controller-revision-hash label, numbered in the order the
// templates were (last) used, and holding a strategic merge patch that
// puts the template back.

// constructHistory returns ds's current revision, created when its
// template is new and renumbered as the latest when an older revision
// holds it (a rollback), and the other, old revisions.
func (dc *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	history, err := dc.claimRevisions(ctx, ds)
	if err != nil {
		return nil, nil, err
	}
	data, err := templatehash.RevisionData(&ds.Spec.Template)
	if err != nil {
		return nil, nil, fmt.Errorf("daemonset: %w", err)
	}
	var current []*appsv1.ControllerRevision
	for _, cr := range history {
		if _, ok := cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			// A revision made without the label takes its name, as
			// Kubernetes does, so no hash needs computing again.
			if cr, err = dc.patchRevision(ctx, cr, map[string]any{"metadata": map[string]any{
				"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: cr.Name}}}); err != nil {
				return nil, nil, err
			}
		}
		if bytes.Equal(cr.Data.Raw, data) {
			current = append(current, cr)
		} else {
			old = append(old, cr)
		}
	}
	next := maxRevision(old) + 1
	if len(current) == 0 {
		cur, err = dc.snapshot(ctx, ds, data, next)
		return cur, old, err
	}
	if cur, err = dc.dedupCurrent(ctx, ds, current); err != nil {
		return nil, nil, err
	}
	if cur.Revision < next {
		cur, err = dc.patchRevision(ctx, cur, map[string]any{"revision": next})
	}
	return cur, old, err
}

// claimRevisions returns ds's revisions after adopting orphans its
// selector matches and releasing those it no longer does.
func (dc *Controller) claimRevisions(ctx context.Context, ds *appsv1.DaemonSet) ([]*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("daemonset: %s/%s has an invalid selector: %w", ds.Namespace, ds.Name, err)
	}
	candidates, err := controllerref.Candidates[*appsv1.ControllerRevision](dc.revIndex, ds.Namespace, string(ds.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: ds, Kind: kind, Match: controllerref.SelectorMatch(sel),
		CanAdopt: controllerref.RecheckDeletionTimestamp(ds.UID, func(ctx context.Context) (metav1.Object, error) {
			return dc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}),
	}
	return controllerref.Claim(ctx, m, candidates, func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := dc.client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// patchRevision merges patch into cr.
func (dc *Controller) patchRevision(ctx context.Context, cr *appsv1.ControllerRevision, patch map[string]any) (*appsv1.ControllerRevision, error) {
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("daemonset: encoding a revision patch: %w", err)
	}
	return dc.client.AppsV1().ControllerRevisions(cr.Namespace).Patch(ctx, cr.Name, types.MergePatchType, raw, metav1.PatchOptions{})
}

func maxRevision(revs []*appsv1.ControllerRevision) int64 {
	var n int64
	for _, cr := range revs {
		n = max(n, cr.Revision)
	}
	return n
}

// snapshot records ds's template as revision number. Its name is taken
// from the pod template hash; should another template hold that name, the
// DaemonSet's collision count goes up (and the sync is retried with the
// new hash), unless the count this sync used was stale.
func (dc *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, data []byte, number int64) (*appsv1.ControllerRevision, error) {
	hash := templatehash.PodTemplate(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := maps.Clone(ds.Spec.Template.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: templatehash.RevisionName(ds.Name, hash), Namespace: ds.Namespace,
			Labels: lbls, Annotations: maps.Clone(ds.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	api := dc.client.AppsV1().ControllerRevisions(ds.Namespace)
	created, err := api.Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, getErr := api.Get(ctx, cr.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if bytes.Equal(existing.Data.Raw, data) {
		return existing, nil
	}
	fresh, getErr := dc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if !reflect.DeepEqual(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("daemonset: %s/%s: the collision count this sync used is stale; retrying", ds.Namespace, ds.Name)
	}
	n := int32(0)
	if fresh.Status.CollisionCount != nil {
		n = *fresh.Status.CollisionCount
	}
	fresh.Status.CollisionCount = ptr.To(n + 1)
	if _, err := dc.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	dc.log.Info("revision name collision: collision count raised", "daemonset", ds.Namespace+"/"+ds.Name, "collisionCount", n+1)
	return nil, fmt.Errorf("daemonset: %s/%s: revision %s holds another template: %w", ds.Namespace, ds.Name, cr.Name, err)
}

// dedupCurrent keeps the highest of several revisions of the current
// template, moves the pods of the others to its hash, and deletes them.
func (dc *Controller) dedupCurrent(ctx context.Context, ds *appsv1.DaemonSet, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	keep := current[0]
	for _, cr := range current[1:] {
		if cr.Revision >= keep.Revision {
			keep = cr
		}
	}
	if len(current) == 1 {
		return keep, nil
	}
	hash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	byNode, err := dc.nodesToPods(ctx, ds, true)
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}}})
	if err != nil {
		return nil, fmt.Errorf("daemonset: encoding a pod patch: %w", err)
	}
	var errs []error
	for _, pods := range byNode {
		for _, p := range pods {
			if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
				continue
			}
			_, err := dc.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, cr := range current {
		if cr.Name == keep.Name {
			continue
		}
		err := dc.client.AppsV1().ControllerRevisions(cr.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return keep, nil
}

// cleanupHistory deletes the oldest of old beyond
// spec.revisionHistoryLimit whose hash no pod carries.
func (dc *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	byNode, err := dc.nodesToPods(ctx, ds, true)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, pods := range byNode {
		for _, p := range pods {
			if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
				live[h] = true
			}
		}
	}
	old = append([]*appsv1.ControllerRevision(nil), old...)
	sort.SliceStable(old, func(i, j int) bool { return old[i].Revision < old[j].Revision })
	for _, cr := range old {
		if toKill <= 0 {
			break
		}
		if live[cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		err := dc.client.AppsV1().ControllerRevisions(cr.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		toKill--
	}
	return nil
}

// revisionTarget is the revision a DaemonSet's pods should be at: the
// hash of its current revision, and its template generation, which
// pods are also recognised by, as in Kubernetes.
type revisionTarget struct {
	hash       string
	generation string
}

func targetOf(ds *appsv1.DaemonSet, hash string) revisionTarget {
	return revisionTarget{hash: hash, generation: ds.Annotations[appsv1.DeprecatedTemplateGeneration]}
}

// matches reports whether pod is of the target revision.
func (t revisionTarget) matches(pod *corev1.Pod) bool {
	return t.hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == t.hash ||
		t.generation != "" && pod.Labels[templateGenerationLabel] == t.generation
}

// templateGenerationLabel carries, on a DaemonSet's pods, the template
// generation they were made from.
const templateGenerationLabel = "pod-template-generation"
