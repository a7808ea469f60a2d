package controllerref

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolveAndSelecting(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	get := func(name string) (*appsv1.ReplicaSet, error) {
		if name == rs.Name {
			return rs, nil
		}
		return nil, errors.New("not found")
	}
	for _, tc := range []struct {
		ref  metav1.OwnerReference
		want bool
	}{
		{metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "u1"}, true},
		{metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "old"}, false},
		{metav1.OwnerReference{Kind: "Deployment", Name: "web", UID: "u1"}, false},
		{metav1.OwnerReference{Kind: "ReplicaSet", Name: "gone", UID: "u1"}, false},
	} {
		if _, ok := Resolve(&tc.ref, "ReplicaSet", get); ok != tc.want {
			t.Errorf("Resolve(%+v) = %v, want %v", tc.ref, ok, tc.want)
		}
	}
	empty := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{}}}
	sel := func(r *appsv1.ReplicaSet) *metav1.LabelSelector { return r.Spec.Selector }
	if got := Selecting([]*appsv1.ReplicaSet{rs, empty}, sel, map[string]string{"app": "web"}); len(got) != 1 || got[0] != rs {
		t.Errorf("Selecting = %v, want only web (an empty selector selects nothing)", got)
	}
	if got := Selecting([]*appsv1.ReplicaSet{rs}, sel, map[string]string{"app": "db"}); len(got) != 0 {
		t.Errorf("Selecting a non-matching object = %v", got)
	}
}
