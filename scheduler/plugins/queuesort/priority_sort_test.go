package queuesort_test

import (
	"testing"
	"time"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/queuesort"
)

func TestPrioritySort(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	qp := func(w *st.PodWrapper, queued time.Time) *framework.QueuedPodInfo {
		return &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(w.Obj()), Timestamp: queued}
	}
	tests := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{"higher priority first", qp(st.MakePod().Priority(10).Created(t0.Add(time.Hour)), t0), qp(st.MakePod().Priority(1).Created(t0), t0), true},
		{"older first", qp(st.MakePod().Created(t0), t0.Add(time.Hour)), qp(st.MakePod().Created(t0.Add(time.Second)), t0), true},
		{"then queue order", qp(st.MakePod().Created(t0), t0.Add(time.Second)), qp(st.MakePod().Created(t0), t0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (queuesort.PrioritySort{}).Less(tt.a, tt.b); got != tt.want {
				t.Errorf("Less = %v, want %v", got, tt.want)
			}
		})
	}
}
