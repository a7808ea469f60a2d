package nodename_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/nodename"

	v1 "k8s.io/api/core/v1"
)

func TestNodeName(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj()}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no node asked", st.MakePod().Obj(), map[string]string{"a": "", "b": ""}},
		{"node b asked", st.MakePod().Node("b").Obj(), map[string]string{"a": nodename.ErrReason, "b": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, nil, nodes)
			got := st.Messages(c.Filter(t, c.Plugin(t, nodename.New), tt.pod))
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
