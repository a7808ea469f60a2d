package controllerref

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// SelectorMatch returns a Match function for a label selector.
func SelectorMatch(sel labels.Selector) func(metav1.Object) bool {
	return func(o metav1.Object) bool { return sel.Matches(labels.Set(o.GetLabels())) }
}

// PodPatcher patches pods through client.
func PodPatcher(client kubernetes.Interface) PatchFunc {
	return func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// ReplicaSetPatcher patches replica sets through client.
func ReplicaSetPatcher(client kubernetes.Interface) PatchFunc {
	return func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := client.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// ClaimPods claims pods for m, through client.
func ClaimPods(ctx context.Context, m *Manager, client kubernetes.Interface, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return Claim(ctx, m, pods, PodPatcher(client))
}

// ClaimReplicaSets claims replica sets for m, through client.
func ClaimReplicaSets(ctx context.Context, m *Manager, client kubernetes.Interface, sets []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	return Claim(ctx, m, sets, ReplicaSetPatcher(client))
}
