package apps

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/core"
)

// Scaler serves the autoscaling/v1 scale subresource of deployments,
// replica sets and stateful sets: kubectl scale and the autoscaler read
// and write replicas through it without touching the rest of the spec.
type Scaler struct{}

// Scale returns obj's scale: spec and status replicas, and the selector in
// its string form, which is what the autoscaler uses to find the pods.
func (Scaler) Scale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	var (
		meta     *metav1.ObjectMeta
		spec     *int32
		status   int32
		selector *metav1.LabelSelector
	)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, spec, status, selector = &o.ObjectMeta, o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		meta, spec, status, selector = &o.ObjectMeta, o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		meta, spec, status, selector = &o.ObjectMeta, o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	default:
		return nil, fmt.Errorf("apps: %T has no scale subresource", obj)
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("apps: invalid selector of %s: %w", meta.Name, err)
	}
	s := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              meta.Name,
			Namespace:         meta.Namespace,
			UID:               meta.UID,
			ResourceVersion:   meta.ResourceVersion,
			CreationTimestamp: meta.CreationTimestamp,
		},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: sel.String()},
	}
	if spec != nil {
		s.Spec.Replicas = *spec
	}
	return s, nil
}

// SetReplicas sets obj's desired replicas from a scale update.
func (Scaler) SetReplicas(obj runtime.Object, replicas int32) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &replicas
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &replicas
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &replicas
	default:
		return fmt.Errorf("apps: %T has no scale subresource", obj)
	}
	return nil
}

// ValidateScale checks a scale update body.
func (Scaler) ValidateScale(s *autoscalingv1.Scale) field.ErrorList {
	return core.ValidateNonnegative(int64(s.Spec.Replicas), field.NewPath("spec", "replicas"))
}
