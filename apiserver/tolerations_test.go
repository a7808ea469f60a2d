package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestDefaultTolerationsAreAddedUnlessPresent(t *testing.T) {
	s := &Server{cfg: Config{NotReadyTolerationSeconds: 300 * time.Second, UnreachableTolerationSeconds: 60 * time.Second}}
	for _, tc := range []struct {
		name string
		have []corev1.Toleration
		want map[string]int64 // key -> seconds (-1: no limit)
	}{
		{"none", nil, map[string]int64{taintNotReady: 300, taintUnreachable: 60}},
		{"own not-ready kept", []corev1.Toleration{{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}},
			map[string]int64{taintNotReady: 5, taintUnreachable: 60}},
		{"tolerates everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, map[string]int64{"": -1}},
		{"NoSchedule only", []corev1.Toleration{{Key: taintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			map[string]int64{taintNotReady: 300, taintUnreachable: 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.have}}
			s.addDefaultTolerations(pod)
			got := map[string]int64{}
			for _, tol := range pod.Spec.Tolerations {
				if tol.Effect == corev1.TaintEffectNoSchedule {
					continue
				}
				got[tol.Key] = ptr.Deref(tol.TolerationSeconds, -1)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("tolerations %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("tolerations %v, want %v", got, tc.want)
				}
			}
		})
	}
}
