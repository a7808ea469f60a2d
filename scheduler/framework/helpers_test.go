package framework_test

import (
	"testing"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
)

func TestTolerates(t *testing.T) {
	taint := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name string
		tol  v1.Toleration
		want bool
	}{
		{"equal", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}, true},
		{"empty operator means equal", v1.Toleration{Key: "dedicated", Value: "gpu"}, true},
		{"other value", v1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"exists", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}, true},
		{"empty key with exists tolerates all", v1.Toleration{Operator: v1.TolerationOpExists}, true},
		{"other effect", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}, false},
		{"other key", v1.Toleration{Key: "team", Operator: v1.TolerationOpExists}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := framework.Tolerates([]v1.Toleration{tt.tol}, &taint); got != tt.want {
				t.Errorf("Tolerates = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNormalizeScores(t *testing.T) {
	tests := []struct {
		name    string
		in      []int64
		reverse bool
		want    []int64
	}{
		{"scaled to the highest", []int64{1, 2, 4}, false, []int64{25, 50, 100}},
		{"reversed", []int64{0, 1, 2}, true, []int64{100, 50, 0}},
		{"all zero", []int64{0, 0}, false, []int64{0, 0}},
		{"all zero reversed", []int64{0, 0}, true, []int64{100, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := make([]framework.NodeScore, len(tt.in))
			for i, s := range tt.in {
				scores[i].Score = s
			}
			framework.NormalizeScores(scores, tt.reverse)
			for i := range scores {
				if scores[i].Score != tt.want[i] {
					t.Fatalf("got %v, want %v", scores, tt.want)
				}
			}
		})
	}
}

func TestStatus(t *testing.T) {
	var ok *framework.Status
	if !ok.IsSuccess() || ok.AsError() != nil || ok.Message() != "" {
		t.Error("nil status is not success")
	}
	s := framework.NewStatus(framework.Unschedulable, "a", "b").WithPlugin("P")
	if !s.IsRejected() || s.Message() != "a, b" || s.Plugin() != "P" || s.AsError() == nil {
		t.Errorf("status = %v %q %q", s.Code(), s.Message(), s.Plugin())
	}
	if framework.NewStatus(framework.Skip).AsError() != nil {
		t.Error("skip is an error")
	}
}
