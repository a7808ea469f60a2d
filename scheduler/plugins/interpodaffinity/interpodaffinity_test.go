package interpodaffinity_test

import (
	"maps"
	"testing"

	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/interpodaffinity"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	affinity = interpodaffinity.ErrReasonAffinityRulesNotMatch
	anti     = interpodaffinity.ErrReasonAntiAffinityRulesNotMatch
	existing = interpodaffinity.ErrReasonExistingAntiAffinityRulesNotMatch
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("n1").Label("zone", "a").Obj(),
		st.MakeNode().Name("n2").Label("zone", "a").Obj(),
		st.MakeNode().Name("n3").Label("zone", "b").Obj(),
		st.MakeNode().Name("n4").Obj(),
	}
}

func pods() []*v1.Pod {
	return []*v1.Pod{
		st.MakePod().Name("db").Label("app", "db").Node("n1").Obj(),
		st.MakePod().Name("guard").Node("n3").PodAntiAffinity("zone", map[string]string{"app": "web"}).Obj(),
	}
}

func TestRequiredPodAffinityAndAntiAffinity(t *testing.T) {
	withNamespaceSelector := st.MakePod().Namespace("apps").Obj()
	withNamespaceSelector.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		TopologyKey:       "zone",
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}},
	}}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"affinity to a zone with a db", st.MakePod().PodAffinity("zone", map[string]string{"app": "db"}).Obj(),
			map[string]string{"n1": "", "n2": "", "n3": affinity, "n4": affinity}},
		{"anti-affinity to the db's host", st.MakePod().PodAntiAffinity(v1.LabelHostname, map[string]string{"app": "db"}).Obj(),
			map[string]string{"n1": anti, "n2": "", "n3": "", "n4": ""}},
		{"an existing pod's anti-affinity", st.MakePod().Label("app", "web").Obj(),
			map[string]string{"n1": "", "n2": "", "n3": existing, "n4": ""}},
		{"the first pod of a group may start anywhere with the key", st.MakePod().Label("app", "cache").PodAffinity("zone", map[string]string{"app": "cache"}).Obj(),
			map[string]string{"n1": "", "n2": "", "n3": "", "n4": affinity}},
		{"a pod not matching its own affinity cannot start a group", st.MakePod().PodAffinity("zone", map[string]string{"app": "cache"}).Obj(),
			map[string]string{"n1": affinity, "n2": affinity, "n3": affinity, "n4": affinity}},
		{"other namespaces are not matched", st.MakePod().Namespace("apps").PodAffinity("zone", map[string]string{"app": "db"}).Obj(),
			map[string]string{"n1": affinity, "n2": affinity, "n3": affinity, "n4": affinity}},
		{"unless a namespace selector picks them", withNamespaceSelector,
			map[string]string{"n1": "", "n2": "", "n3": affinity, "n4": affinity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := st.NewCluster(t, pods(), nodes(), st.WithNamespaceLabels(map[string]map[string]string{"default": {"team": "data"}}))
			if got := st.Messages(c.Filter(t, c.Plugin(t, interpodaffinity.New), tt.pod)); !maps.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestPreferredTermsScoreBothWays(t *testing.T) {
	c := st.NewCluster(t, pods(), nodes())
	pl := c.Plugin(t, interpodaffinity.New)
	pod := st.MakePod().PreferredPodAffinity(10, "zone", map[string]string{"app": "db"}).
		PreferredPodAntiAffinity(5, v1.LabelHostname, map[string]string{"app": "db"}).Obj()
	// n1: +10 (zone a) -5 (its host) = 5; n2: +10; n3, n4: 0.
	if got, want := c.Score(t, pl, pod), map[string]int64{"n1": 50, "n2": 100, "n3": 0, "n4": 0}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// An existing pod's preferred anti-affinity pushes the incoming pod away.
	shy := st.MakePod().Name("shy").Node("n2").PreferredPodAntiAffinity(7, "zone", map[string]string{"app": "web"}).Obj()
	c = st.NewCluster(t, append(pods(), shy), nodes())
	if got, want := c.Score(t, c.Plugin(t, interpodaffinity.New), st.MakePod().Label("app", "web").Obj()), map[string]int64{"n1": 0, "n2": 0, "n3": 100, "n4": 100}; !maps.Equal(got, want) {
		t.Errorf("symmetric: got %v, want %v", got, want)
	}
}
