package apiserver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultTolerationSeconds is how long a pod stays on a node that is not
// ready or unreachable before it is evicted, unless it says otherwise
// (Kubernetes' DefaultTolerationSeconds admission).
const DefaultTolerationSeconds = 300 * time.Second

// Taints the node lifecycle controller puts on failing nodes.
const (
	taintNotReady    = "node.kubernetes.io/not-ready"
	taintUnreachable = "node.kubernetes.io/unreachable"
)

// addDefaultTolerations gives a new pod NoExecute tolerations of the
// not-ready and unreachable taints for the configured time, unless it
// already tolerates them, so that a short node failure does not evict
// every pod at once.
func (s *Server) addDefaultTolerations(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	add := func(key string, d time.Duration) {
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") &&
				(t.Operator == corev1.TolerationOpExists || t.Key == key) {
				return
			}
		}
		secs := int64(d / time.Second)
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
		})
	}
	add(taintNotReady, s.cfg.NotReadyTolerationSeconds)
	add(taintUnreachable, s.cfg.UnreachableTolerationSeconds)
}
