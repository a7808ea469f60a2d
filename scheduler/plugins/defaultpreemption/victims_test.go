package defaultpreemption

import (
	"testing"
	"time"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPickOne(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(priority int32, started time.Duration) *framework.PodInfo {
		st := metav1.NewTime(t0.Add(started))
		return framework.NewPodInfo(&v1.Pod{Spec: v1.PodSpec{Priority: &priority}, Status: v1.PodStatus{StartTime: &st}})
	}
	tests := []struct {
		name string
		cs   []candidate
		want string
	}{
		{"lowest highest priority", []candidate{{"a", []*framework.PodInfo{pod(5, 0)}}, {"b", []*framework.PodInfo{pod(1, 0), pod(2, 0)}}}, "b"},
		{"then lowest priority sum", []candidate{{"a", []*framework.PodInfo{pod(2, 0), pod(2, 0)}}, {"b", []*framework.PodInfo{pod(2, 0), pod(-5, 0)}}}, "b"},
		{"fewer victims of equal priority sum lower", []candidate{{"a", []*framework.PodInfo{pod(0, 0), pod(0, 0)}}, {"b", []*framework.PodInfo{pod(0, 0)}}}, "b"},
		{"then the most recently started", []candidate{{"a", []*framework.PodInfo{pod(3, 0)}}, {"b", []*framework.PodInfo{pod(3, time.Hour)}}}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pickOne(tt.cs).node; got != tt.want {
				t.Errorf("picked %s, want %s", got, tt.want)
			}
		})
	}
}
