package schedtest

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a Ready node that takes 110 pods and nothing else.
func MakeNode() *NodeWrapper {
	return &NodeWrapper{v1.Node{Status: v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
		Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
		Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
	}}}
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Name sets the name and the hostname label, as the kubelet does.
func (n *NodeWrapper) Name(name string) *NodeWrapper {
	n.Node.Name = name
	return n.Label(v1.LabelHostname, name)
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return n
}

// Capacity sets capacity and allocatable (keeping the pod count unless
// r names it).
func (n *NodeWrapper) Capacity(r Res) *NodeWrapper {
	for k, v := range r.List() {
		n.Status.Capacity[k] = v
		n.Status.Allocatable[k] = v
	}
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Meta exposes the object meta, for tests that set more.
func (n *NodeWrapper) Meta() *metav1.ObjectMeta { return &n.ObjectMeta }
