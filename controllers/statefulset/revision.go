package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CurrentRevisionAnnotation holds, on a StatefulSet, the name and data of
// its current revision: the template that pods below the partition (or
// recreated under OnDelete) are made from while a newer template rolls
// out. Kubernetes keeps these in ControllerRevision objects; Cairn's API
// does not serve apps/v1 controllerrevisions yet, so the controller keeps
// the one revision it needs on the set itself. Revision names and pod
// labels are those Kubernetes would give, so moving to ControllerRevisions
// later keeps existing pods current.
const CurrentRevisionAnnotation = "apps.cairn.io/current-revision"

// revision is one template of a set and its name, <set>-<hash>.
type revision struct {
	name     string
	template *corev1.PodTemplateSpec
	data     []byte
}

type storedRevision struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// updateRevision is the revision of set's current spec.template.
func updateRevision(set *appsv1.StatefulSet) (revision, error) {
	data, err := templatehash.RevisionData(&set.Spec.Template)
	if err != nil {
		return revision{}, fmt.Errorf("statefulset: %w", err)
	}
	var collisions int32
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	prefix := set.Name
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return revision{name: prefix + "-" + templatehash.Revision(data, &collisions), template: &set.Spec.Template, data: data}, nil
}

// currentRevision is the revision named by status.currentRevision, when
// the set still holds its template; else the update revision (a new set,
// or a history lost, in which case every pod moves to the new template).
func currentRevision(set *appsv1.StatefulSet, upd revision) (revision, bool) {
	name := set.Status.CurrentRevision
	if name == "" || name == upd.name {
		return upd, true
	}
	var st storedRevision
	raw, ok := set.Annotations[CurrentRevisionAnnotation]
	if !ok || json.Unmarshal([]byte(raw), &st) != nil || st.Name != name {
		return upd, false
	}
	t, err := templatehash.TemplateFromRevisionData(st.Data)
	if err != nil {
		return upd, false
	}
	return revision{name: name, template: t, data: st.Data}, true
}

// recordRevision stores rev as set's current revision unless it is
// already, with set's resourceVersion as a precondition so that the data
// stored is that of the template the sync saw.
func (sc *Controller) recordRevision(ctx context.Context, set *appsv1.StatefulSet, rev revision) (*appsv1.StatefulSet, error) {
	var st storedRevision
	if raw, ok := set.Annotations[CurrentRevisionAnnotation]; ok && json.Unmarshal([]byte(raw), &st) == nil && st.Name == rev.name {
		return set, nil
	}
	value, err := json.Marshal(storedRevision{Name: rev.name, Data: rev.data})
	if err != nil {
		return nil, fmt.Errorf("statefulset: encoding the revision: %w", err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]string{CurrentRevisionAnnotation: string(value)},
		"resourceVersion": set.ResourceVersion,
	}})
	if err != nil {
		return nil, fmt.Errorf("statefulset: encoding the revision patch: %w", err)
	}
	return sc.client.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}
