package podutil

import (
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// pod is a test pod builder.
type pod struct{ p *corev1.Pod }

func newPod(name string) pod {
	return pod{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}}
}

func (b pod) node(n string) pod { b.p.Spec.NodeName = n; return b }
func (b pod) phase(p corev1.PodPhase) pod {
	b.p.Status.Phase = p
	return b
}
func (b pod) readyFor(d time.Duration) pod {
	b.p.Status.Phase = corev1.PodRunning
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d))})
	return b
}
func (b pod) created(ago time.Duration) pod {
	b.p.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	return b
}
func (b pod) cost(c string) pod {
	b.p.Annotations = map[string]string{DeletionCostAnnotation: c}
	return b
}
func (b pod) restarts(n int32) pod {
	b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}}
	return b
}

func TestRankedOrdersPodsToDeleteFirst(t *testing.T) {
	tests := []struct {
		name  string
		pods  []pod
		ranks []int
		want  string // the first pod after sorting
	}{
		{"unscheduled first", []pod{newPod("a").node("n1").readyFor(time.Hour), newPod("b")}, nil, "b"},
		{"pending before running", []pod{newPod("a").node("n1").readyFor(time.Hour), newPod("b").node("n1").phase(corev1.PodPending)}, nil, "b"},
		{"not ready before ready", []pod{newPod("a").node("n1").readyFor(time.Hour), newPod("b").node("n1").phase(corev1.PodRunning)}, nil, "b"},
		{"lower deletion cost first", []pod{newPod("a").node("n1").readyFor(time.Hour).cost("5"), newPod("b").node("n1").readyFor(time.Hour).cost("-1")}, nil, "b"},
		{"doubled up first", []pod{newPod("a").node("n1").readyFor(time.Hour), newPod("b").node("n2").readyFor(time.Hour)}, []int{1, 3}, "b"},
		{"ready for less time first", []pod{newPod("a").node("n1").readyFor(10 * time.Hour), newPod("b").node("n1").readyFor(time.Second)}, nil, "b"},
		{"more restarts first", []pod{newPod("a").node("n1").phase(corev1.PodRunning), newPod("b").node("n1").phase(corev1.PodRunning).restarts(4)}, nil, "b"},
		{"newer first", []pod{newPod("a").node("n1").phase(corev1.PodRunning).created(10 * time.Hour), newPod("b").node("n1").phase(corev1.PodRunning).created(time.Minute)}, nil, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, reverse := range []bool{false, true} {
				var pods []*corev1.Pod
				var ranks []int
				for i, p := range tt.pods {
					pods = append(pods, p.p.DeepCopy())
					if tt.ranks != nil {
						ranks = append(ranks, tt.ranks[i])
					}
				}
				if reverse {
					for i, j := 0, len(pods)-1; i < j; i, j = i+1, j-1 {
						pods[i], pods[j] = pods[j], pods[i]
						if ranks != nil {
							ranks[i], ranks[j] = ranks[j], ranks[i]
						}
					}
				}
				sort.Sort(Ranked{Pods: pods, Rank: ranks, Now: now})
				if pods[0].Name != tt.want {
					t.Fatalf("first to delete is %s, want %s (reversed input: %v)", pods[0].Name, tt.want, reverse)
				}
			}
		})
	}
}

func TestIsAvailable(t *testing.T) {
	tests := []struct {
		name     string
		p        *corev1.Pod
		minReady int32
		want     bool
	}{
		{"not ready", newPod("a").phase(corev1.PodRunning).p, 0, false},
		{"ready, no minReadySeconds", newPod("a").readyFor(0).p, 0, true},
		{"ready too recently", newPod("a").readyFor(5 * time.Second).p, 10, false},
		{"ready long enough", newPod("a").readyFor(11 * time.Second).p, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsAvailable(tt.p, tt.minReady, now); got != tt.want {
				t.Fatalf("IsAvailable = %v, want %v", got, tt.want)
			}
		})
	}
}
