package tainttoleration_test

import (
	"maps"
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/tainttoleration"

	v1 "k8s.io/api/core/v1"
)

func TestTaintsKeepOutPodsThatDoNotTolerateThem(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("plain").Obj(),
		st.MakeNode().Name("gpu").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("draining").Taint("drain", "", v1.TaintEffectNoExecute).Obj(),
		st.MakeNode().Name("soft").Taint("cheap", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	gpuMsg := "node(s) had untolerated taint {dedicated: gpu}"
	drainMsg := "node(s) had untolerated taint {drain: }"
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no tolerations", st.MakePod().Obj(), map[string]string{"plain": "", "gpu": gpuMsg, "draining": drainMsg, "soft": ""}},
		{"tolerates gpu", st.MakePod().Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			map[string]string{"plain": "", "gpu": "", "draining": drainMsg, "soft": ""}},
		{"wrong value", st.MakePod().Toleration("dedicated", "tpu", v1.TaintEffectNoSchedule).Obj(),
			map[string]string{"plain": "", "gpu": gpuMsg, "draining": drainMsg, "soft": ""}},
		{"tolerates everything", st.MakePod().Toleration("", "", "").Obj(), map[string]string{"plain": "", "gpu": "", "draining": "", "soft": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, nil, nodes)
			res := c.Filter(t, c.Plugin(t, tainttoleration.New), tt.pod)
			if got := st.Messages(res); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for n, s := range res {
				if s != nil && s.Code() != framework.UnschedulableAndUnresolvable {
					t.Errorf("%s: code %v; preemption cannot remove a taint", n, s.Code())
				}
			}
		})
	}
}

func TestSoftTaintsLowerTheScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("clean").Obj(),
		st.MakeNode().Name("one").Taint("a", "", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("two").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("b", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"no tolerations", st.MakePod().Obj(), map[string]int64{"clean": 100, "one": 50, "two": 0}},
		{"tolerates a", st.MakePod().Toleration("a", "", v1.TaintEffectPreferNoSchedule).Obj(), map[string]int64{"clean": 100, "one": 100, "two": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, nil, nodes)
			if got := c.Score(t, c.Plugin(t, tainttoleration.New), tt.pod); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
