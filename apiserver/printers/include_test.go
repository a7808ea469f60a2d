package printers

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSetIncludeObject(t *testing.T) {
	tests := []struct {
		policy   metav1.IncludeObjectPolicy
		tableGV  string
		wantKind string // of the row object, "" for none
		wantGV   string
	}{
		{metav1.IncludeNone, "meta.k8s.io/v1", "", ""},
		{metav1.IncludeMetadata, "meta.k8s.io/v1", "PartialObjectMetadata", "meta.k8s.io/v1"},
		{"", "meta.k8s.io/v1", "PartialObjectMetadata", "meta.k8s.io/v1"},
		{metav1.IncludeMetadata, "meta.k8s.io/v1beta1", "PartialObjectMetadata", "meta.k8s.io/v1beta1"},
		{metav1.IncludeObject, "meta.k8s.io/v1", "Pod", "v1"},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/"+tt.tableGV, func(t *testing.T) {
			pod := testPod().obj()
			pod.Labels = map[string]string{"app": "web"}
			table := render(t, pod, true)
			table.APIVersion = tt.tableGV
			if err := SetIncludeObject(table, tt.policy); err != nil {
				t.Fatal(err)
			}
			obj := table.Rows[0].Object.Object
			if tt.wantKind == "" {
				if obj != nil || table.Rows[0].Object.Raw != nil {
					t.Errorf("object = %v, want none", obj)
				}
				return
			}
			gvk := obj.GetObjectKind().GroupVersionKind()
			if gvk.Kind != tt.wantKind || gvk.GroupVersion().String() != tt.wantGV {
				t.Errorf("object kind = %v, want %s %s", gvk, tt.wantGV, tt.wantKind)
			}
			if partial, ok := obj.(*metav1.PartialObjectMetadata); ok {
				if partial.Name != "web" || partial.Labels["app"] != "web" {
					t.Errorf("metadata = %+v, want name and labels of the pod", partial.ObjectMeta)
				}
			}
			// The original may be shared with a cache; it must not change.
			if !pod.GetObjectKind().GroupVersionKind().Empty() {
				t.Errorf("the pod's own TypeMeta was set to %v", pod.GetObjectKind().GroupVersionKind())
			}
		})
	}
}

func TestSetIncludeObjectKeepsKindsAlreadySet(t *testing.T) {
	pod := testPod().obj()
	pod.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	table := render(t, pod, true)
	if err := SetIncludeObject(table, metav1.IncludeObject); err != nil {
		t.Fatal(err)
	}
	if table.Rows[0].Object.Object != pod {
		t.Errorf("a pod with its kind set was copied")
	}
}

func TestSetIncludeObjectRejectsUnknownPolicies(t *testing.T) {
	table := render(t, &corev1.PodList{}, true)
	if err := SetIncludeObject(table, "Everything"); !errors.Is(err, ErrIncludeObject) {
		t.Errorf("error = %v, want ErrIncludeObject", err)
	}
}
