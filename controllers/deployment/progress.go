package deployment

import (
	"context"
	"fmt"
	"math"
	"time"

	"cairn/controllers/internal/keyqueue"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the Deployment conditions, as Kubernetes writes them (kubectl
// rollout status looks for ProgressDeadlineExceeded).
const (
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonFailedReplicaSetCreate     = "ReplicaSetCreateError"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func newCondition(t appsv1.DeploymentConditionType, st corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: st, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func condition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition puts c in st unless a condition of its type with the same
// status and reason is there; the transition time stays when only the
// reason changes.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := condition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	st.Conditions = append(withoutCondition(st.Conditions, c.Type), c)
}

func withoutCondition(cs []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range cs {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// calculateStatus counts d's pods over its sets and sets the Available
// condition: True once replicas-maxUnavailable pods are available.
func calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := availableReplicas(all)
	unavailable := max(specReplicas(all)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualReplicas(all),
		UpdatedReplicas:     actualReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(all),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable,
			"Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable,
			"Deployment does not have minimum availability.", now))
	}
	return st
}

// complete reports whether st shows every replica updated and available,
// for d's current generation.
func complete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	r := *d.Spec.Replicas
	return st.UpdatedReplicas == r && st.Replicas == r && st.AvailableReplicas == r && st.ObservedGeneration >= d.Generation
}

// progressing reports whether st moved the rollout on from d's status.
func progressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// timedOut reports whether the rollout has made no progress for
// progressDeadlineSeconds, judged by the Progressing condition's last
// update.
func timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := condition(*st, appsv1.DeploymentProgressing)
	switch {
	case c == nil, c.Reason == ReasonNewReplicaSetAvailable:
		return false
	case c.Reason == ReasonProgressDeadlineExceeded:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// rolloutStatus is the status of d after a rollout step, with the
// Progressing condition judged against the deadline and the ReplicaFailure
// condition carried over from the sets.
func rolloutStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	st := calculateStatus(all, newRS, d, now)
	if !hasProgressDeadline(d) {
		st.Conditions = withoutCondition(st.Conditions, appsv1.DeploymentProgressing)
	}
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !done {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case complete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable,
				subject+" has successfully progressed.", now))
		case progressing(d, &st):
			// Progress refreshes lastUpdateTime even with an unchanged
			// reason: that is what the deadline is measured from.
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject+" is progressing.", now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				st.Conditions = withoutCondition(st.Conditions, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case timedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded,
				subject+" has timed out progressing.", now))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(&st, *f)
	} else {
		st.Conditions = withoutCondition(st.Conditions, appsv1.DeploymentReplicaFailure)
	}
	return st
}

// replicaFailure is the ReplicaFailure condition of the new set, else of
// any set, as a Deployment condition.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, sets := range [][]*appsv1.ReplicaSet{{newRS}, all} {
		for _, rs := range sets {
			if rs == nil {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status,
						Reason: c.Reason, Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime}
				}
			}
		}
	}
	return nil
}

// syncRolloutStatus writes d's rollout status; when nothing changed it
// makes sure d is looked at again when its deadline would pass.
func (dc *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := rolloutStatus(all, newRS, d, dc.clock.Now())
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		dc.requeueStuck(d, st)
		return nil
	}
	d.Status = st
	return dc.updateStatus(ctx, d)
}

// requeueStuck schedules a progress check of d for when its deadline
// passes, so a stalled rollout is reported without any event to wake it.
func (dc *Controller) requeueStuck(d *appsv1.Deployment, st appsv1.DeploymentStatus) {
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil || complete(d, &st) || cur.Reason == ReasonProgressDeadlineExceeded {
		return
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(dc.clock.Now())
	if after < time.Second {
		if key, ok := keyqueue.Key(d); ok {
			dc.queue.AddRateLimited(key)
		}
		return
	}
	// A second of slack: lastUpdateTime is stored to the second.
	dc.enqueueAfter(d, after+time.Second)
}

// checkPausedConditions marks the Progressing condition paused or resumed
// as spec.paused changes, so the deadline does not run while paused.
func (dc *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	paused := cur != nil && cur.Reason == ReasonDeploymentPaused
	now := dc.clock.Now()
	switch {
	case d.Spec.Paused && !paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", now))
	case !d.Spec.Paused && paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", now))
	default:
		return nil
	}
	return dc.updateStatus(ctx, d)
}
