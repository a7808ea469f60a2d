package apiserver

import (
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

func TestPatchTypes(t *testing.T) {
	pod := corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "web:1"}, {Name: "sidecar", Image: "side:1"},
	}}}
	pod.Name = "p"
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	current, _ := json.Marshal(&pod)

	decode := func(t *testing.T, b []byte) corev1.Pod {
		var p corev1.Pod
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("StrategicMergeMergesContainersByName", func(t *testing.T) {
		out, err := applyPatch(types.StrategicMergePatchType, current, []byte(`{"spec":{"containers":[{"name":"web","image":"web:2"}]}}`), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		p := decode(t, out)
		if len(p.Spec.Containers) != 2 || p.Spec.Containers[0].Image != "web:2" || p.Spec.Containers[1].Image != "side:1" {
			t.Fatalf("containers after strategic merge: %+v", p.Spec.Containers)
		}
	})
	t.Run("StrategicMergeDeleteDirective", func(t *testing.T) {
		out, err := applyPatch(types.StrategicMergePatchType, current, []byte(`{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}`), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		if p := decode(t, out); len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "web" {
			t.Fatalf("containers: %+v", p.Spec.Containers)
		}
	})
	t.Run("MergePatchReplacesLists", func(t *testing.T) {
		out, err := applyPatch(types.MergePatchType, current, []byte(`{"metadata":{"labels":{"tier":null}},"spec":{"containers":[{"name":"only","image":"x"}]}}`), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		p := decode(t, out)
		if len(p.Spec.Containers) != 1 || p.Labels["tier"] != "" || p.Labels["app"] != "web" {
			t.Fatalf("after merge patch: %+v %v", p.Spec.Containers, p.Labels)
		}
	})
	t.Run("JSONPatch", func(t *testing.T) {
		out, err := applyPatch(types.JSONPatchType, current, []byte(`[{"op":"replace","path":"/spec/containers/1/image","value":"side:2"},{"op":"add","path":"/metadata/labels/new","value":"v"}]`), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		p := decode(t, out)
		if p.Spec.Containers[1].Image != "side:2" || p.Labels["new"] != "v" {
			t.Fatalf("after json patch: %+v %v", p.Spec.Containers, p.Labels)
		}
		_, err = applyPatch(types.JSONPatchType, current, []byte(`[{"op":"test","path":"/metadata/name","value":"other"}]`), &corev1.Pod{})
		if code := apiCode(err); code != http.StatusUnprocessableEntity {
			t.Fatalf("failing test op: %v (code %d), want 422", err, code)
		}
	})
	t.Run("GarbageIsBadRequest", func(t *testing.T) {
		for _, pt := range []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType} {
			if code := apiCode2(applyPatch(pt, current, []byte(`{{{`), &corev1.Pod{})); code != http.StatusBadRequest {
				t.Errorf("%s garbage: code %d, want 400", pt, code)
			}
		}
	})
}

func apiCode(err error) int {
	if st, ok := err.(apierrors.APIStatus); ok {
		return int(st.Status().Code)
	}
	return 0
}

func apiCode2(_ []byte, err error) int { return apiCode(err) }
