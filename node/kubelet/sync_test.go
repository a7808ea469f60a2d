package kubelet

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPastDeadline(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 10, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-time.Minute))
	tests := []struct {
		name     string
		deadline *int64
		start    *metav1.Time
		want     bool
	}{
		{"no deadline", nil, &started, false},
		{"not started", ptr.To[int64](1), nil, false},
		{"within", ptr.To[int64](120), &started, false},
		{"past", ptr.To[int64](30), &started, true},
		{"exactly", ptr.To[int64](60), &started, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p").Build()
			pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime = tt.deadline, tt.start
			if got := pastDeadline(pod, now); got != tt.want {
				t.Errorf("pastDeadline = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMountRetryDelayDoublesToItsCap(t *testing.T) {
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}
	for i, w := range want {
		if got := mountRetryDelay(i + 1); got != w {
			t.Errorf("delay after %d failures = %v, want %v", i+1, got, w)
		}
	}
	if got := mountRetryDelay(1000); got != retryMount {
		t.Errorf("delay after 1000 failures = %v, want %v", got, retryMount)
	}
}
