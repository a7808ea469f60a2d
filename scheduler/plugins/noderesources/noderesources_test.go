package noderesources_test

import (
	"maps"
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/noderesources"

	v1 "k8s.io/api/core/v1"
)

func TestFitCountsAllocatableMinusPlacedPods(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("n").Capacity(st.Res{"cpu": "2", "memory": "4Gi", "ephemeral-storage": "10Gi", "nvidia.com/gpu": "1"}).Obj(),
		st.MakeNode().Name("tiny").Capacity(st.Res{"cpu": "4", "memory": "8Gi", "pods": "1"}).Obj(),
	}
	placed := []*v1.Pod{
		st.MakePod().Name("p1").Node("n").Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj(),
		st.MakePod().Name("p2").Node("tiny").Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"fits", st.MakePod().Req(st.Res{"cpu": "1", "memory": "3Gi"}).Obj(), map[string]string{"n": "", "tiny": noderesources.TooManyPods}},
		{"too much cpu", st.MakePod().Req(st.Res{"cpu": "1500m"}).Obj(), map[string]string{"n": "Insufficient cpu", "tiny": noderesources.TooManyPods}},
		{"every lacking resource is named", st.MakePod().Req(st.Res{"cpu": "2", "memory": "4Gi"}).Obj(),
			map[string]string{"n": "Insufficient cpu, Insufficient memory", "tiny": noderesources.TooManyPods}},
		{"ephemeral storage", st.MakePod().Req(st.Res{"ephemeral-storage": "11Gi"}).Obj(),
			map[string]string{"n": "Insufficient ephemeral-storage", "tiny": "Too many pods, Insufficient ephemeral-storage"}},
		{"extended resource", st.MakePod().Req(st.Res{"nvidia.com/gpu": "2"}).Obj(),
			map[string]string{"n": "Insufficient nvidia.com/gpu", "tiny": "Too many pods, Insufficient nvidia.com/gpu"}},
		{"init container larger than the rest", st.MakePod().Req(st.Res{"cpu": "100m"}).InitReq(st.Res{"cpu": "1500m"}).Obj(),
			map[string]string{"n": "Insufficient cpu", "tiny": noderesources.TooManyPods}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, placed, nodes)
			res := c.Filter(t, c.Plugin(t, noderesources.NewFit), tt.pod)
			if got := st.Messages(res); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for n, s := range res {
				if s != nil && s.Code() != framework.Unschedulable {
					t.Errorf("%s: code %v, want Unschedulable (preemption may help)", n, s.Code())
				}
			}
		})
	}
}

func TestLeastAllocatedPrefersEmptierNodes(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("empty").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("half").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
	}
	placed := []*v1.Pod{st.MakePod().Name("x").Node("half").Req(st.Res{"cpu": "2", "memory": "2Gi"}).Obj()}
	c := st.NewCluster(t, placed, nodes)
	pod := st.MakePod().Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj()
	// empty: (3/4, 3/4) left = 75; half: (1/4, 1/4) = 25.
	if got, want := c.Score(t, c.Plugin(t, noderesources.NewLeastAllocated), pod), map[string]int64{"empty": 75, "half": 25}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestBalancedAllocationPrefersEvenUse(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("cpu-heavy").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("even").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
	}
	placed := []*v1.Pod{
		st.MakePod().Name("x").Node("cpu-heavy").Req(st.Res{"cpu": "3", "memory": "1Gi"}).Obj(),
		st.MakePod().Name("y").Node("even").Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj(),
	}
	c := st.NewCluster(t, placed, nodes)
	pod := st.MakePod().Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj()
	// cpu-heavy: cpu 4/4, mem 2/4: 100 - 50/2 = 75; even: 2/4 and 2/4 = 100.
	if got, want := c.Score(t, c.Plugin(t, noderesources.NewBalancedAllocation), pod), map[string]int64{"cpu-heavy": 75, "even": 100}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
