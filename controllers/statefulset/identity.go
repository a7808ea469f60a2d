package statefulset

import (
	"regexp"
	"strconv"

	"cairn/controllers/internal/podcontrol"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podNameRE splits a stateful pod's name into its set and ordinal.
var podNameRE = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal returns the set name and ordinal in a pod's name, or
// ordinal -1 when the name is not <set>-<ordinal>.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := podNameRE.FindStringSubmatch(pod.Name)
	if m == nil {
		return "", -1
	}
	n, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return "", -1
	}
	return m[1], int(n)
}

func ordinal(pod *corev1.Pod) int {
	_, o := parentAndOrdinal(pod)
	return o
}

// isMemberOf reports whether pod is named as one of set's.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, o := parentAndOrdinal(pod)
	return o >= 0 && parent == set.Name
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// claimName is the claim a pod of set mounts for template t.
func claimName(set *appsv1.StatefulSet, t *corev1.PersistentVolumeClaim, ordinal int) string {
	return t.Name + "-" + podName(set, ordinal)
}

// claims returns the claims the pod of ordinal needs, in template order:
// the templates, named for the pod, labelled with the set's selector.
func claims(set *appsv1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		c := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c.Name = claimName(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		c.Namespace = set.Namespace
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for k, v := range set.Spec.Selector.MatchLabels {
			c.Labels[k] = v
		}
		c.ResourceVersion, c.UID = "", ""
		if set.Spec.PersistentVolumeClaimRetentionPolicy != nil &&
			set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			// Deleted with the set by the garbage collector.
			ref := metav1.NewControllerRef(set, kind)
			ref.Controller = nil
			c.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		out = append(out, c)
	}
	return out
}

// newPod builds the pod of ordinal from set's template at revision rev.
func newPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, rev string, ordinal int) *corev1.Pod {
	pod := podcontrol.FromTemplate(template, set, metav1.NewControllerRef(set, kind))
	pod.GenerateName = ""
	pod.Name = podName(set, ordinal)
	setIdentity(set, pod)
	setStorage(set, pod)
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = rev
	return pod
}

// setIdentity gives pod its stable network identity and labels.
func setIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	o := ordinal(pod)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(o)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
}

// setStorage mounts the pod's claims in place of the template's volumes of
// the same names.
func setStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	cs := claims(set, ordinal(pod))
	if len(cs) == 0 {
		return
	}
	byName := map[string]bool{}
	vols := make([]corev1.Volume, 0, len(cs)+len(pod.Spec.Volumes))
	for i, c := range cs {
		name := set.Spec.VolumeClaimTemplates[i].Name
		byName[name] = true
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	for _, v := range pod.Spec.Volumes {
		if !byName[v.Name] {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
}

// identityMatches reports whether pod carries the identity of its ordinal
// in set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, o := parentAndOrdinal(pod)
	return o >= 0 && parent == set.Name && pod.Namespace == set.Namespace &&
		pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name &&
		pod.Labels[appsv1.PodIndexLabel] == strconv.Itoa(o)
}

func podRevision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }
