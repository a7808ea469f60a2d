package podtopologyspread_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/podtopologyspread"

	v1 "k8s.io/api/core/v1"
)

const (
	skew    = podtopologyspread.ErrReasonConstraintsNotMatch
	missing = podtopologyspread.ErrReasonNodeLabelNotMatch
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("a2").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("c1").Label("zone", "c").Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
}

// pods: web 2 in zone a, 1 in zone b, 0 in zone c (one terminating);
// db 1 in each zone.
func pods() []*v1.Pod {
	return []*v1.Pod{
		st.MakePod().Name("w1").Label("app", "web").Node("a1").Obj(),
		st.MakePod().Name("w2").Label("app", "web").Node("a2").Obj(),
		st.MakePod().Name("w3").Label("app", "web").Node("b1").Obj(),
		st.MakePod().Name("w4").Label("app", "web").Node("c1").Terminating().Obj(),
		st.MakePod().Name("w5").Label("app", "web").Namespace("other").Node("c1").Obj(),
		st.MakePod().Name("d1").Label("app", "db").Node("a1").Obj(),
		st.MakePod().Name("d2").Label("app", "db").Node("b1").Obj(),
		st.MakePod().Name("d3").Label("app", "db").Node("c1").Obj(),
	}
}

func TestDoNotScheduleKeepsSkewWithinMax(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"only the emptiest zone", st.MakePod().Label("app", "web").Spread(1, "zone", v1.DoNotSchedule, web).Obj(),
			map[string]string{"a1": skew, "a2": skew, "b1": skew, "c1": "", "nozone": missing}},
		{"a larger skew allows more", st.MakePod().Label("app", "web").Spread(2, "zone", v1.DoNotSchedule, web).Obj(),
			map[string]string{"a1": skew, "a2": skew, "b1": "", "c1": "", "nozone": missing}},
		{"a pod outside the selector does not count itself", st.MakePod().Label("app", "other").Spread(1, "zone", v1.DoNotSchedule, web).Obj(),
			map[string]string{"a1": skew, "a2": skew, "b1": "", "c1": "", "nozone": missing}},
		{"nodes the pod cannot use are not domains", st.MakePod().Label("app", "web").NodeAffinityIn("zone", "a", "b").Spread(1, "zone", v1.DoNotSchedule, web).Obj(),
			map[string]string{"a1": skew, "a2": skew, "b1": "", "c1": "", "nozone": missing}},
		{"balanced domains accept", st.MakePod().Label("app", "db").Spread(1, "zone", v1.DoNotSchedule, db).Obj(),
			map[string]string{"a1": "", "a2": "", "b1": "", "c1": "", "nozone": missing}},
		{"too few domains for minDomains count as empty ones", st.MakePod().Label("app", "db").Spread(1, "zone", v1.DoNotSchedule, db).MinDomains(4).Obj(),
			map[string]string{"a1": skew, "a2": skew, "b1": skew, "c1": skew, "nozone": missing}},
		{"ScheduleAnyway does not filter", st.MakePod().Label("app", "web").Spread(1, "zone", v1.ScheduleAnyway, web).Obj(),
			map[string]string{"a1": "", "a2": "", "b1": "", "c1": "", "nozone": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, pods(), nodes())
			if got := st.Messages(c.Filter(t, c.Plugin(t, podtopologyspread.New), tt.pod)); !maps.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestScheduleAnywayPrefersEmptierDomains(t *testing.T) {
	c := st.NewCluster(t, pods(), nodes())
	pl := c.Plugin(t, podtopologyspread.New)
	pod := st.MakePod().Label("app", "web").Spread(1, "zone", v1.ScheduleAnyway, map[string]string{"app": "web"}).Obj()
	// Raw: a 2*log(5)≈3, b ≈2, c 0; normalized 100*(max+min-s)/max.
	want := map[string]int64{"a1": 0, "a2": 0, "b1": 33, "c1": 100, "nozone": 0}
	if got := c.Score(t, pl, pod); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := c.Score(t, pl, st.MakePod().Obj()); got != nil {
		t.Errorf("scored a pod without constraints: %v", got)
	}
}
