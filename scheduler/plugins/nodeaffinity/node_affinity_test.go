package nodeaffinity_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/nodeaffinity"

	v1 "k8s.io/api/core/v1"
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("a").Label("zone", "a").Label("disk", "ssd").Obj(),
		st.MakeNode().Name("b").Label("zone", "b").Obj(),
		st.MakeNode().Name("c").Obj(),
	}
}

func TestRequiredNodeAffinityAndSelector(t *testing.T) {
	no := nodeaffinity.ErrReason
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"nothing required", st.MakePod().Obj(), map[string]string{"a": "", "b": "", "c": ""}},
		{"node selector", st.MakePod().NodeSelector("zone", "b").Obj(), map[string]string{"a": no, "b": "", "c": no}},
		{"affinity in", st.MakePod().NodeAffinityIn("zone", "a", "b").Obj(), map[string]string{"a": "", "b": "", "c": no}},
		{"terms are ORed", st.MakePod().NodeAffinityIn("zone", "b").NodeAffinityIn("disk", "ssd").Obj(), map[string]string{"a": "", "b": "", "c": no}},
		{"selector and affinity are ANDed", st.MakePod().NodeSelector("disk", "ssd").NodeAffinityIn("zone", "b").Obj(), map[string]string{"a": no, "b": no, "c": no}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, nil, nodes())
			if got := st.Messages(c.Filter(t, c.Plugin(t, nodeaffinity.New), tt.pod)); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreferredNodeAffinityScores(t *testing.T) {
	c := st.NewCluster(t, nil, nodes())
	pl := c.Plugin(t, nodeaffinity.New)
	if got := c.Score(t, pl, st.MakePod().Obj()); got != nil {
		t.Errorf("scored a pod without preferences: %v", got)
	}
	pod := st.MakePod().PreferredNodeAffinityIn(10, "zone", "a").PreferredNodeAffinityIn(30, "zone", "b").PreferredNodeAffinityIn(10, "disk", "ssd").Obj()
	if got, want := c.Score(t, pl, pod), map[string]int64{"a": 66, "b": 100, "c": 0}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
