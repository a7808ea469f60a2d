package apiserver

import (
	"context"
	"fmt"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var priorityClassesResource = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}

// admitPriority fills a new pod's priority from its priorityClassName, or
// from the cluster's global default class when it names none, as
// Kubernetes' Priority admission does: the scheduler orders and preempts
// by spec.priority, which users set through classes. A class that does
// not exist, or a priority that disagrees with the class, is refused.
func (h *restHandler) admitPriority(ctx context.Context, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	ph, ok := h.s.handlers[priorityClassesResource]
	if !ok {
		return nil
	}
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		got, err := ph.getCached(ctx, "", name)
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(h.res.GVR.GroupResource(), pod.Name,
				fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		if err != nil {
			return err
		}
		class, _ = got.(*schedulingv1.PriorityClass)
	} else {
		var err error
		if class, err = ph.globalDefaultClass(ctx); err != nil {
			return err
		}
	}
	var value int32
	policy := corev1.PreemptLowerPriority
	if class != nil {
		value = class.Value
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return apierrors.NewForbidden(h.res.GVR.GroupResource(), pod.Name, fmt.Errorf(
			"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name",
			*pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return apierrors.NewForbidden(h.res.GVR.GroupResource(), pod.Name, fmt.Errorf(
			"the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name",
			*pod.Spec.PreemptionPolicy, policy))
	}
	if class != nil && pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = class.Name
	}
	pod.Spec.Priority, pod.Spec.PreemptionPolicy = &value, &policy
	return nil
}

// globalDefaultClass returns the class marked globalDefault, the one of
// the lowest value if several are, or nil.
func (h *restHandler) globalDefaultClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	list, err := h.store.List(ctx, h.prefix(""), storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var found *schedulingv1.PriorityClass
	for i, pc := range list.(*schedulingv1.PriorityClassList).Items {
		if pc.GlobalDefault && (found == nil || pc.Value < found.Value) {
			found = &list.(*schedulingv1.PriorityClassList).Items[i]
		}
	}
	return found, nil
}
