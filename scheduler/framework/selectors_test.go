package framework_test

import (
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
)

func TestSelectorMatchesAsKubernetesDoes(t *testing.T) {
	web := map[string]string{"app": "web", "rev": "2"}
	tests := []struct {
		name string
		sel  *metav1.LabelSelector
		keys []string
		op   selection.Operator
		want bool
	}{
		{"nil matches nothing", nil, nil, "", false},
		{"empty matches everything", &metav1.LabelSelector{}, nil, "", true},
		{"match labels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, nil, "", true},
		{"match labels, other value", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, nil, "", false},
		{"expressions", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "web"}}}}, nil, "", true},
		{"both must hold", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}, nil, "", false},
		{"matchLabelKeys: same revision", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, []string{"rev"}, selection.In, false},
		{"mismatchLabelKeys: other revision", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, []string{"rev"}, selection.NotIn, true},
	}
	// The selecting pod is at revision 3.
	owner := st.MakePod().Label("rev", "3").Obj()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := framework.NewSelector(tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			if tt.keys != nil {
				if s, err = s.WithLabelKeys(owner, tt.keys, tt.op); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Matches(web); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := framework.NewSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "not valid!"}}); err == nil {
		t.Error("an invalid label value was accepted")
	}
}
