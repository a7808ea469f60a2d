package kubelet

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"cairn/scheduler/framework"
	"cairn/scheduler/plugins/nodeaffinity"
	"cairn/scheduler/plugins/nodeports"
	"cairn/scheduler/plugins/noderesources"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Reasons of pods the kubelet rejects, as Kubernetes' kubelet gives them.
const (
	reasonNodeAffinity = "NodeAffinity"
	reasonNodePorts    = "NodePorts"
	reasonTaint        = "TaintToleration"
	reasonOutOfPods    = "OutOfpods"
)

// admitter keeps the kubelet's admission decisions: the scheduler
// placed most pods where they fit, but a pod bound by its creator
// (spec.nodeName) was not checked, nor one placed while the node's
// capacity changed. Pods are decided one at a time, each against the
// pods bound to the node before it, as Kubernetes' kubelet admits them
// in creation order.
type admitter struct {
	// rejected are the pods this kubelet refused whose Failed status the
	// pod cache may not show yet: they hold nothing.
	rejected map[types.UID]bool
}

// admit decides whether the node takes pod, which it has not started:
// its sysctls, the node's selector and affinity, NoExecute taints, its
// host ports and the resources left. It returns the reason and message of a rejection.
func (k *Kubelet) admit(pod *corev1.Pod) (reason, msg string, ok bool) {
	if m, bad := forbiddenSysctl(pod, k.cfg.AllowedUnsafeSysctls); bad {
		return reasonSysctlForbidden, m, false
	}
	if k.nodeLister == nil || k.podLister == nil {
		return "", "", true
	}
	node, err := k.nodeLister.Get(k.cfg.NodeName)
	if err != nil {
		return "", "", true // not registered yet: nothing to check against
	}
	k.admitMu.Lock()
	defer k.admitMu.Unlock()
	pods, _ := k.podLister.List(labels.Everything())
	var before []*framework.PodInfo
	pending := map[types.UID]bool{}
	for _, p := range pods {
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !ended {
			pending[p.UID] = true
		}
		if p.UID != pod.UID && p.Spec.NodeName == k.cfg.NodeName && !k.admission.rejected[p.UID] && !ended && createdBefore(p, pod) {
			before = append(before, framework.NewPodInfo(p))
		}
	}
	// Forget the rejections the cache shows, Failed or gone.
	for uid := range k.admission.rejected {
		if !pending[uid] {
			delete(k.admission.rejected, uid)
		}
	}
	info := framework.NewNodeInfo(node, before...)
	pi := framework.NewPodInfo(pod)
	reason, msg, ok = fits(pi, info)
	if !ok {
		if k.admission.rejected == nil {
			k.admission.rejected = map[types.UID]bool{}
		}
		k.admission.rejected[pod.UID] = true
	}
	return reason, msg, ok
}

// fits runs the scheduler's own filters that Kubernetes' kubelet runs
// at admission.
func fits(pi *framework.PodInfo, node *framework.NodeInfo) (reason, msg string, ok bool) {
	ctx := context.Background()
	if st := (nodeaffinity.NodeAffinity{}).Filter(ctx, nil, pi, node); st != nil {
		return reasonNodeAffinity, "Predicate NodeAffinity failed: " + strings.Join(st.Reasons(), ", "), false
	}
	// Of the taints, only NoExecute ones: the others keep the
	// scheduler from placing pods, not a node from running them.
	for _, t := range node.Taints() {
		if t.Effect == corev1.TaintEffectNoExecute && !framework.Tolerates(pi.Pod.Spec.Tolerations, &t) {
			return reasonTaint, fmt.Sprintf("Predicate TaintToleration failed: node(s) had untolerated taint {%s: %s}", t.Key, t.Value), false
		}
	}
	if st := (nodeports.NodePorts{}).Filter(ctx, nil, pi, node); st != nil {
		return reasonNodePorts, "Predicate NodePorts failed: " + strings.Join(st.Reasons(), ", "), false
	}
	short := noderesources.Insufficient(&pi.Requests, node)
	if len(short) == 0 {
		return "", "", true
	}
	if short[0] == noderesources.TooManyPods {
		return reasonOutOfPods, fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d",
			len(node.Pods), node.Allocatable.AllowedPodNumber), false
	}
	name := strings.TrimPrefix(short[0], "Insufficient ")
	requested, used, capacity := resourceFigures(name, &pi.Requests, node)
	return "OutOf" + name, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		name, requested, used, capacity), false
}

// resourceFigures are the pod's request, the node's use and its
// allocatable of one resource, in the units Kubernetes reports them.
func resourceFigures(name string, req *framework.Resource, node *framework.NodeInfo) (requested, used, capacity int64) {
	switch corev1.ResourceName(name) {
	case corev1.ResourceCPU:
		return req.MilliCPU, node.Requested.MilliCPU, node.Allocatable.MilliCPU
	case corev1.ResourceMemory:
		return req.Memory, node.Requested.Memory, node.Allocatable.Memory
	case corev1.ResourceEphemeralStorage:
		return req.EphemeralStorage, node.Requested.EphemeralStorage, node.Allocatable.EphemeralStorage
	}
	r := corev1.ResourceName(name)
	return req.Scalar[r], node.Requested.Scalar[r], node.Allocatable.Scalar[r]
}

// createdBefore orders pods as the kubelet admits them: by creation,
// then by UID.
func createdBefore(a, b *corev1.Pod) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return sort.StringsAreSorted([]string{string(a.UID), string(b.UID)})
}
