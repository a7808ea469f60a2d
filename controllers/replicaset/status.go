package replicaset

import (
	"context"
	"reflect"
	"time"

	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func secondsDuration(s int32) time.Duration { return time.Duration(s) * time.Second }

// Reasons of the ReplicaFailure condition.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// calculateStatus counts rs's pods: all of them, those carrying every
// template label, the ready and the available ones; and sets or clears the
// ReplicaFailure condition after manageErr.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	tmpl := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var full, ready, available int32
	for _, p := range pods {
		if tmpl.Matches(labels.Set(p.Labels)) {
			full++
		}
		if podutil.IsReady(p) {
			ready++
			if podutil.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := condition(st, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ReasonFailedCreate
		if len(pods) > int(*rs.Spec.Replicas) {
			reason = ReasonFailedDelete
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		st.Conditions = withoutCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = full
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	return st
}

func condition(st appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func withoutCondition(cs []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range cs {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// statusUpdateRetries is how many times a conflicting status write is
// retried on a fresh copy before the key is requeued.
const statusUpdateRetries = 1

// updateStatus writes st to rs unless nothing would change, recording the
// generation it acted on.
func (rc *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if rs.Status.Replicas == st.Replicas && rs.Status.FullyLabeledReplicas == st.FullyLabeledReplicas &&
		rs.Status.ReadyReplicas == st.ReadyReplicas && rs.Status.AvailableReplicas == st.AvailableReplicas &&
		rs.Generation == rs.Status.ObservedGeneration && reflect.DeepEqual(rs.Status.Conditions, st.Conditions) {
		return rs, nil
	}
	st.ObservedGeneration = rs.Generation
	client := rc.client.AppsV1().ReplicaSets(rs.Namespace)
	for i := 0; ; i++ {
		rs.Status = st
		updated, err := client.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		if i >= statusUpdateRetries {
			return nil, err
		}
		fresh, getErr := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		// The counts stand; only the generation acted on must not move
		// past what this sync saw.
		rs = fresh
	}
}
