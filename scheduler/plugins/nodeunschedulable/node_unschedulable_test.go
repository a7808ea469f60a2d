package nodeunschedulable_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/nodeunschedulable"

	v1 "k8s.io/api/core/v1"
)

func TestCordonedNodesTakeOnlyPodsThatTolerateIt(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("open").Obj(), st.MakeNode().Name("cordoned").Unschedulable().Obj()}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"plain pod", st.MakePod().Obj(), map[string]string{"open": "", "cordoned": nodeunschedulable.ErrReason}},
		{"tolerating pod", st.MakePod().Toleration(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule).Obj(), map[string]string{"open": "", "cordoned": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, nil, nodes)
			got := st.Messages(c.Filter(t, c.Plugin(t, nodeunschedulable.New), tt.pod))
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
