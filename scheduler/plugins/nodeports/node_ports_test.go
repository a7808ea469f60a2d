package nodeports_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/nodeports"

	v1 "k8s.io/api/core/v1"
)

func TestHostPortsMustBeFree(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj()}
	pods := []*v1.Pod{st.MakePod().Name("web").Node("a").HostPort(80).Obj()}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no host port", st.MakePod().Obj(), map[string]string{"a": "", "b": ""}},
		{"taken port", st.MakePod().HostPort(80).Obj(), map[string]string{"a": nodeports.ErrReason, "b": ""}},
		{"free port", st.MakePod().HostPort(8080).Obj(), map[string]string{"a": "", "b": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, pods, nodes)
			if got := st.Messages(c.Filter(t, c.Plugin(t, nodeports.New), tt.pod)); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
