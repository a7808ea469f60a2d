package controllerref

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestUpdatedRoutesToOldAndNewControllersOrAdopters(t *testing.T) {
	pod := func(owner string, app string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": app}}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Name: owner, Controller: ptr.To(true)}}
		}
		return p
	}
	resolve := func(_ string, ref *metav1.OwnerReference) *string {
		if ref.Name == "gone" {
			return nil
		}
		return &ref.Name
	}
	matching := func(*corev1.Pod) []*string { return []*string{ptr.To("adopter")} }
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		want     []string
		owner    string
	}{
		{"owner kept", pod("a", "x"), pod("a", "y"), []string{"a"}, "a"},
		{"owner changed", pod("a", "x"), pod("b", "x"), []string{"a", "b"}, "b"},
		{"released, then adoptable", pod("a", "x"), pod("", "x"), []string{"a", "adopter"}, ""},
		{"orphan relabelled", pod("", "x"), pod("", "y"), []string{"adopter"}, ""},
		{"orphan unchanged", pod("", "x"), pod("", "x"), nil, ""},
		{"owner not in the cache", pod("gone", "x"), pod("gone", "x"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			o, ok := Updated(tc.old, tc.cur, resolve, matching, func(obj any) { got = append(got, *obj.(*string)) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("enqueued %v, want %v", got, tc.want)
			}
			if ok != (tc.owner != "") || (ok && *o != tc.owner) {
				t.Errorf("current owner %v %v, want %q", o, ok, tc.owner)
			}
		})
	}
}

func TestDeletedUnwrapsTombstones(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, obj := range []any{p, cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p}} {
		if got, ok := Deleted[*corev1.Pod](obj); !ok || got != p {
			t.Errorf("Deleted(%T) = %v, %v", obj, got, ok)
		}
	}
	if _, ok := Deleted[*corev1.Pod](cache.DeletedFinalStateUnknown{Obj: &corev1.Node{}}); ok {
		t.Error("a tombstone of another kind was accepted")
	}
}
