package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// replicaSetsAndSyncRevision splits d's sets into the new one (whose
// template is d's; nil unless it exists or create is set) and the old
// ones, bringing revisions up to date on the way.
func (dc *Controller) replicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := findOldReplicaSets(d, sets)
	newRS, err := dc.newReplicaSet(ctx, d, sets, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

// newReplicaSet returns d's new set, updating its annotations and
// minReadySeconds, or creates it (sized as the strategy allows) when
// create is set. The revision goes on d, and a Progressing condition
// records that the set was found or created.
func (dc *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, sets, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, sets)
	newRevision := strconv.FormatInt(maxRevision(old)+1, 10)
	now := dc.clock.Now()
	if existing != nil {
		cp := existing.DeepCopy()
		annotated := setNewReplicaSetAnnotations(d, cp, newRevision, true)
		if annotated || cp.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			cp.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return dc.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
		}
		if err := dc.setRevision(ctx, d, cp.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && condition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", cp.Name), now))
			if err := dc.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return cp, nil
	}
	if !create {
		return nil, nil
	}

	tmpl := *d.Spec.Template.DeepCopy()
	hash := templatehash.PodTemplate(&tmpl, d.Status.CollisionCount)
	tmpl.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)},
			Labels:          tmpl.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        sel,
			Template:        tmpl,
		},
	}
	*rs.Spec.Replicas = newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), old...), rs), rs)
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := dc.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		cur, getErr := dc.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &cur.Spec.Template) {
			// Ours, created by an earlier sync the cache had not shown.
			created, err = cur, nil
			break
		}
		// A hash collision: another object has the name. Perturb the
		// hash for the next sync.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if uerr := dc.updateStatus(ctx, d); uerr == nil {
			dc.log.Info("hash collision with an existing replica set", "deployment", d.Namespace+"/"+d.Name,
				"replicaset", rs.Name, "collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedReplicaSetCreate, msg, now))
			_ = dc.updateStatus(ctx, d)
		}
		dc.recorder.Event(d, corev1.EventTypeWarning, ReasonFailedReplicaSetCreate, msg)
		return nil, err
	}
	if !alreadyExists && *rs.Spec.Replicas > 0 {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, *rs.Spec.Replicas)
	}
	if err := dc.setRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if !alreadyExists && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), now))
		if err := dc.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// setRevision records rev as d's revision annotation when it is newer. It
// is a metadata patch rather than part of the status write because the API
// server's deployments/status keeps the stored annotations.
func (dc *Controller) setRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" {
		return nil
	}
	cur, ok := d.Annotations[RevisionAnnotation]
	if ok {
		c, err1 := strconv.ParseInt(cur, 10, 64)
		n, err2 := strconv.ParseInt(rev, 10, 64)
		if err1 == nil && err2 == nil && c >= n {
			return nil
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]string{RevisionAnnotation: rev},
		"resourceVersion": d.ResourceVersion,
	}})
	if err != nil {
		return fmt.Errorf("deployment: encoding the revision patch: %w", err)
	}
	updated, err := dc.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	st := d.Status
	*d = *updated
	d.Status = st
	return nil
}

// updateStatus writes d's status, and keeps d current for later writes of
// the same sync.
func (dc *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *updated
	return nil
}

// syncStatus writes d's status computed from its sets, if it changed.
func (dc *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := calculateStatus(all, newRS, d, dc.clock.Now())
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return dc.updateStatus(ctx, d)
}
