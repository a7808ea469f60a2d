package apps

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const revisionData = `{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`

func testRevision(f func(*appsv1.ControllerRevision)) *appsv1.ControllerRevision {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9c", Namespace: "default", ResourceVersion: "1",
			Labels: map[string]string{"controller-revision-hash": "7d9c"}},
		Data:     runtime.RawExtension{Raw: []byte(revisionData)},
		Revision: 2,
	}
	if f != nil {
		f(cr)
	}
	return cr
}

func TestControllerRevisionValidation(t *testing.T) {
	s := ControllerRevisionStrategy()
	tests := []struct {
		name string
		cr   *appsv1.ControllerRevision
		want []wantErr
	}{
		{"valid", testRevision(nil), nil},
		{"revision zero", testRevision(func(cr *appsv1.ControllerRevision) { cr.Revision = 0 }), nil},
		{"no data", testRevision(func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{} }),
			[]wantErr{{"data", field.ErrorTypeRequired}}},
		{"negative revision", testRevision(func(cr *appsv1.ControllerRevision) { cr.Revision = -1 }),
			[]wantErr{{"revision", field.ErrorTypeInvalid}}},
		{"bad name", testRevision(func(cr *appsv1.ControllerRevision) { cr.Name = "Web_1" }),
			[]wantErr{{"metadata.name", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.PrepareForCreate(ctx, tt.cr)
			checkErrs(t, s.Validate(ctx, tt.cr), tt.want...)
		})
	}
}

func TestControllerRevisionUpdate(t *testing.T) {
	s := ControllerRevisionStrategy()
	old := testRevision(nil)
	tests := []struct {
		name string
		cr   *appsv1.ControllerRevision
		want []wantErr
	}{
		{"relabel and adopt", testRevision(func(cr *appsv1.ControllerRevision) {
			cr.Labels["extra"] = "yes"
			cr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "web", UID: "u"}}
		}), nil},
		{"new revision number", testRevision(func(cr *appsv1.ControllerRevision) { cr.Revision = 5 }), nil},
		{"same data spaced differently", testRevision(func(cr *appsv1.ControllerRevision) {
			cr.Data.Raw = []byte(`{"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}`)
		}), nil},
		{"data changed", testRevision(func(cr *appsv1.ControllerRevision) {
			cr.Data.Raw = []byte(`{"spec":{"template":{"$patch":"replace"}}}`)
		}), []wantErr{{"data", field.ErrorTypeInvalid}}},
		{"data removed", testRevision(func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{} }),
			[]wantErr{{"data", field.ErrorTypeRequired}, {"data", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.PrepareForUpdate(ctx, tt.cr, old)
			checkErrs(t, s.ValidateUpdate(ctx, tt.cr, old), tt.want...)
			if s.SpecChanged(tt.cr, old) {
				t.Error("a revision has no spec: generation must not move")
			}
		})
	}
}

// TestDaemonSetTemplateGeneration follows the annotation kubectl and the
// DaemonSet controller read: 1 on create, one more per template change
// only, and never what a client sends.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	s := DaemonSetStrategy()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "d"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels()}, Template: template(webLabels())}}
	s.Default(ds)
	s.PrepareForCreate(ctx, ds)
	gen := func(ds *appsv1.DaemonSet) string { return ds.Annotations[appsv1.DeprecatedTemplateGeneration] }
	if gen(ds) != "1" {
		t.Fatalf("created with template generation %q, want 1", gen(ds))
	}
	steps := []struct {
		name   string
		change func(*appsv1.DaemonSet)
		want   string
	}{
		{"no template change", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = 5 }, "1"},
		{"new image", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" }, "2"},
		{"client sets it", func(ds *appsv1.DaemonSet) { ds.Annotations[appsv1.DeprecatedTemplateGeneration] = "40" }, "2"},
		{"client drops it", func(ds *appsv1.DaemonSet) { ds.Annotations = nil }, "2"},
		{"template label", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels["tier"] = "x" }, "3"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			upd := ds.DeepCopy()
			st.change(upd)
			s.Default(upd)
			s.PrepareForUpdate(ctx, upd, ds)
			if gen(upd) != st.want {
				t.Fatalf("template generation %q, want %s", gen(upd), st.want)
			}
			ds = upd
		})
	}
}
