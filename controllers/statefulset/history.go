package statefulset

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sort"

	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// A set's history is kept in ControllerRevisions, as Kubernetes keeps it,
// so that `kubectl rollout history` and `kubectl rollout undo` work: one
// revision per template the set has had, named <set>-<hash>, numbered in
// the order the templates were (last) used, labelled with the template's
// labels and the hash, owned by the set, and holding a strategic merge
// patch that puts the template back. Pods carry the name of the revision
// they were made from in their controller-revision-hash label.

// revisionHashLabel labels a ControllerRevision with its hash, as
// Kubernetes' controller history does.
const revisionHashLabel = "controller.kubernetes.io/hash"

// revision is one template of a set: its ControllerRevision and the
// template it holds.
type revision struct {
	name     string
	template *corev1.PodTemplateSpec
	cr       *appsv1.ControllerRevision
}

func revisionOf(cr *appsv1.ControllerRevision) (revision, error) {
	t, err := templatehash.TemplateFromRevisionData(cr.Data.Raw)
	if err != nil {
		return revision{}, fmt.Errorf("statefulset: revision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return revision{name: cr.Name, template: t, cr: cr}, nil
}

// newRevision builds the ControllerRevision of set's current template,
// numbered number, its name made unique by collisionCount. It carries
// the set's annotations (kubectl shows their change-cause as the
// revision's).
func newRevision(set *appsv1.StatefulSet, number int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	data, err := templatehash.RevisionData(&set.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("statefulset: %w", err)
	}
	hash := templatehash.Revision(data, &collisionCount)
	lbls := maps.Clone(set.Spec.Template.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[revisionHashLabel] = hash
	annotations := maps.Clone(set.Annotations)
	delete(annotations, legacyRevisionAnnotation)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: templatehash.RevisionName(set.Name, hash), Namespace: set.Namespace,
			Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}, nil
}

// claimRevisions returns set's revisions, oldest first, after adopting
// orphans its selector matches and releasing those it no longer does.
func (sc *Controller) claimRevisions(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*appsv1.ControllerRevision, error) {
	candidates, err := controllerref.Candidates[*appsv1.ControllerRevision](sc.revIndex, set.Namespace, string(set.UID))
	if err != nil {
		return nil, err
	}
	m := &controllerref.Manager{
		Controller: set, Kind: kind, Match: controllerref.SelectorMatch(sel),
		CanAdopt: controllerref.RecheckDeletionTimestamp(set.UID, func(ctx context.Context) (metav1.Object, error) {
			return sc.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}),
	}
	owned, err := controllerref.Claim(ctx, m, candidates, func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := sc.client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	sortRevisions(owned)
	return owned, nil
}

// sortRevisions orders revisions by number, then age, then name.
func sortRevisions(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		a, b := revs[i], revs[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// nextRevision is the number the next revision takes.
func nextRevision(history []*appsv1.ControllerRevision) int64 {
	if len(history) == 0 {
		return 1
	}
	return history[len(history)-1].Revision + 1
}

// revisions finds the current and update revisions of set in history
// (sorted), as Kubernetes does: the update revision is that of the
// set's template, created if the template is new, and renumbered as the
// latest if an older revision holds it (a rollback). The current
// revision is the one status names, or the update revision when status
// names none known. It returns the collision count the names were made
// with.
func (sc *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, history []*appsv1.ControllerRevision) (cur, upd revision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	want, err := newRevision(set, nextRevision(history), collisionCount)
	if err != nil {
		return cur, upd, collisionCount, err
	}
	var equal []*appsv1.ControllerRevision
	for _, cr := range history {
		if equalRevisions(cr, want) {
			equal = append(equal, cr)
		}
	}
	var updCR *appsv1.ControllerRevision
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == history[len(history)-1]:
		updCR = history[len(history)-1]
	case len(equal) > 0:
		updCR, err = sc.renumberRevision(ctx, equal[len(equal)-1], want.Revision)
	default:
		updCR, err = sc.createRevision(ctx, set, want, &collisionCount)
	}
	if err != nil {
		return cur, upd, collisionCount, err
	}
	if upd, err = revisionOf(updCR); err != nil {
		return cur, upd, collisionCount, err
	}
	cur = upd
	for _, cr := range history {
		if cr.Name == set.Status.CurrentRevision {
			if cur, err = revisionOf(cr); err != nil {
				return cur, upd, collisionCount, err
			}
			break
		}
	}
	return cur, upd, collisionCount, nil
}

// equalRevisions reports whether two revisions hold the same template.
// (Kubernetes also compares their hash labels when both are decimal
// numbers, which its encoded hashes are not: the data decides.)
func equalRevisions(a, b *appsv1.ControllerRevision) bool {
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// createRevision creates cr. A name already taken by another template (a
// hash collision) bumps collisionCount and tries the next name; a name
// taken by the same template is that revision.
func (sc *Controller) createRevision(ctx context.Context, set *appsv1.StatefulSet, cr *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	api := sc.client.AppsV1().ControllerRevisions(set.Namespace)
	for {
		hash := templatehash.Revision(cr.Data.Raw, collisionCount)
		cr = cr.DeepCopy()
		cr.Name = templatehash.RevisionName(set.Name, hash)
		cr.Labels[revisionHashLabel] = hash
		created, err := api.Create(ctx, cr, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		existing, err := api.Get(ctx, cr.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, cr.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
}

// renumberRevision makes cr the latest revision, number.
func (sc *Controller) renumberRevision(ctx context.Context, cr *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	if cr.Revision == number {
		return cr, nil
	}
	patch := fmt.Appendf(nil, `{"revision":%d}`, number)
	return sc.client.AppsV1().ControllerRevisions(cr.Namespace).Patch(ctx, cr.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// truncateHistory deletes the oldest revisions beyond
// spec.revisionHistoryLimit that no pod, nor the current or update
// revision, uses.
func (sc *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, history []*appsv1.ControllerRevision, cur, upd revision) error {
	live := map[string]bool{cur.name: true, upd.name: true}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, cr := range history {
		if !live[cr.Name] {
			old = append(old, cr)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	for _, cr := range old[:max(len(old)-limit, 0)] {
		err := sc.client.AppsV1().ControllerRevisions(cr.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
