package framework_test

import (
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
)

func TestFitErrorReadsLikeKubernetes(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	status := func(code framework.Code, reasons ...string) *framework.Status {
		return framework.NewStatus(code, reasons...)
	}
	tests := []struct {
		name string
		diag func() framework.Diagnosis
		n    int
		want string
	}{
		{
			name: "reasons counted over nodes and sorted",
			n:    3,
			diag: func() framework.Diagnosis {
				m := framework.NewNodeToStatus(nil)
				m.Set("a", status(framework.Unschedulable, "Insufficient cpu"))
				m.Set("b", status(framework.Unschedulable, "Insufficient cpu", "Insufficient memory"))
				m.Set("c", status(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"))
				return framework.Diagnosis{NodeToStatus: m}
			},
			want: "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu.",
		},
		{
			name: "preemption message appended",
			n:    1,
			diag: func() framework.Diagnosis {
				m := framework.NewNodeToStatus(nil)
				m.Set("a", status(framework.Unschedulable, "Insufficient cpu"))
				return framework.Diagnosis{NodeToStatus: m, PostFilterMsg: "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."}
			},
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name: "a PreFilter rejection is said once",
			n:    5,
			diag: func() framework.Diagnosis {
				s := status(framework.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
				return framework.Diagnosis{NodeToStatus: framework.NewNodeToStatus(s), PreFilterMsg: s.Message()}
			},
			want: "0/5 nodes are available: node(s) didn't match pod affinity rules.",
		},
		{
			name: "unrecorded nodes share the absent status",
			n:    4,
			diag: func() framework.Diagnosis {
				m := framework.NewNodeToStatus(status(framework.UnschedulableAndUnresolvable, "Preemption is not helpful for scheduling"))
				m.Set("a", status(framework.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod"))
				return framework.Diagnosis{NodeToStatus: m}
			},
			want: "0/4 nodes are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := &framework.FitError{Pod: pod, NumAllNodes: tt.n, Diagnosis: tt.diag()}
			if got := fe.Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
