package daemonset

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// daemonTolerations are added to every DaemonSet pod, as Kubernetes adds
// them: a daemon stays on a node that is unreachable or not ready, and
// lands on nodes under resource pressure or cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkToleration is added for pods on the host network, which do
// not need the pod network to be up.
var hostNetworkToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// addDaemonTolerations adds the daemon tolerations to spec, replacing a
// toleration of the same key, operator, value and effect.
func addDaemonTolerations(spec *corev1.PodSpec) {
	ts := append([]corev1.Toleration(nil), daemonTolerations...)
	if spec.HostNetwork {
		ts = append(ts, hostNetworkToleration)
	}
	for i := range ts {
		addOrUpdateToleration(spec, &ts[i])
	}
}

func addOrUpdateToleration(spec *corev1.PodSpec, t *corev1.Toleration) {
	var out []corev1.Toleration
	updated := false
	for i := range spec.Tolerations {
		if t.MatchToleration(&spec.Tolerations[i]) {
			if apiequality.Semantic.DeepEqual(*t, spec.Tolerations[i]) {
				return
			}
			out = append(out, *t)
			updated = true
			continue
		}
		out = append(out, spec.Tolerations[i])
	}
	if !updated {
		out = append(out, *t)
	}
	spec.Tolerations = out
}

// podTemplate is the template of ds's pods at revision hash: the daemon
// tolerations added, and the pod-template-generation (from the API
// server's annotation) and controller-revision-hash labels.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if gen, err := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64); err == nil {
		t.Labels[templateGenerationLabel] = strconv.FormatInt(gen, 10)
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	return t
}

// pinToNode makes a pod's required node affinity select node by name
// only, so that the scheduler binds it there; the DaemonSet's own node
// affinity has already been checked against node.
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if affinity == nil {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// targetNode is the node a daemon pod is for: its nodeName once bound,
// else the node its affinity pins it to.
func targetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0], nil
				}
			}
		}
	}
	return "", fmt.Errorf("daemonset: no target node for pod %s/%s", pod.Namespace, pod.Name)
}

// shouldRun reports whether ds wants a pod on node (its nodeName, node
// selector, required node affinity and tolerations allow it) and whether a
// pod already there may keep running (it may when only NoSchedule taints
// are not tolerated).
func shouldRun(node *corev1.Node, ds *appsv1.DaemonSet) (run, keep bool) {
	if n := ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	pod := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Namespace = ds.Namespace
	pod.Spec.NodeName = node.Name
	addDaemonTolerations(&pod.Spec)
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !fits {
		return false, false
	}
	log := klog.Background()
	_, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(log, node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	if !untolerated {
		return true, true
	}
	_, evicting := schedulingcorev1.FindMatchingUntoleratedTaint(log, node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !evicting
}
