// Package defaultbinder binds pods through the pods/binding subresource.
package defaultbinder

import (
	"context"
	"fmt"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/names"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultBinder is the plugin.
type DefaultBinder struct {
	h framework.Handle
}

var _ framework.BindPlugin = (*DefaultBinder)(nil)

// New is the plugin's factory.
func New(h framework.Handle) (framework.Plugin, error) { return &DefaultBinder{h: h}, nil }

// Name implements framework.Plugin.
func (*DefaultBinder) Name() string { return names.DefaultBinder }

// Bind implements framework.BindPlugin. The binding carries the pod's
// UID, so a pod deleted and recreated under the same name meanwhile is
// not bound by mistake; the API refuses pods that are already bound.
func (b *DefaultBinder) Bind(ctx context.Context, _ *framework.CycleState, pod *framework.PodInfo, nodeName string) *framework.Status {
	p := pod.Pod
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.h.ClientSet().CoreV1().Pods(p.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(fmt.Errorf("defaultbinder: bind %s/%s to %s: %w", p.Namespace, p.Name, nodeName, err))
	}
	return nil
}
