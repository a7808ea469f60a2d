package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// legacyRevisionAnnotation is where the controller kept a set's current
// revision, {"name": ..., "data": ...}, before the API served
// ControllerRevisions. Its names and data are those of ControllerRevisions,
// so a set caught mid-rollout keeps its current template by moving it into
// one.
const legacyRevisionAnnotation = "apps.cairn.io/current-revision"

// migrateLegacyRevision moves the revision a set keeps in the legacy
// annotation into a ControllerRevision, unless history has it already,
// and removes the annotation. It returns the history with that revision,
// and the set as the API returned it.
func (sc *Controller) migrateLegacyRevision(ctx context.Context, set *appsv1.StatefulSet, history []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, *appsv1.StatefulSet, error) {
	raw, ok := set.Annotations[legacyRevisionAnnotation]
	if !ok {
		return history, set, nil
	}
	var stored struct {
		Name string          `json:"name"`
		Data json.RawMessage `json:"data"`
	}
	// Only the revision status still names is worth keeping; anything
	// unreadable is dropped, and pods then move to the update revision.
	if json.Unmarshal([]byte(raw), &stored) == nil && stored.Name != "" && stored.Name == set.Status.CurrentRevision && !hasRevision(history, stored.Name) {
		cr, err := sc.createLegacyRevision(ctx, set, stored.Name, stored.Data, nextRevision(history))
		if err != nil {
			return nil, nil, err
		}
		if cr != nil {
			history = append(history, cr)
			sortRevisions(history)
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null},"resourceVersion":%q}}`, legacyRevisionAnnotation, set.ResourceVersion)
	updated, err := sc.client.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("statefulset: removing the %s annotation: %w", legacyRevisionAnnotation, err)
	}
	return history, updated, nil
}

// createLegacyRevision stores a legacy revision as a ControllerRevision
// owned by set; nil when its data holds no template.
func (sc *Controller) createLegacyRevision(ctx context.Context, set *appsv1.StatefulSet, name string, data []byte, number int64) (*appsv1.ControllerRevision, error) {
	t, err := templatehash.TemplateFromRevisionData(data)
	if err != nil {
		sc.log.Warn("dropping an unreadable legacy revision", "statefulset", set.Namespace+"/"+set.Name, "revision", name, "err", err)
		return nil, nil
	}
	lbls := maps.Clone(t.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[revisionHashLabel] = name[strings.LastIndex(name, "-")+1:]
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	created, err := sc.client.AppsV1().ControllerRevisions(set.Namespace).Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	// Created by an earlier try whose annotation removal failed, or
	// someone else's: the next sync claims it or not.
	existing, err := sc.client.AppsV1().ControllerRevisions(set.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || !metav1.IsControlledBy(existing, set) {
		return nil, err
	}
	return existing, nil
}

func hasRevision(history []*appsv1.ControllerRevision, name string) bool {
	for _, cr := range history {
		if cr.Name == name {
			return true
		}
	}
	return false
}
