package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ctx = context.Background()

func fields(errs field.ErrorList) map[string]field.ErrorType {
	out := map[string]field.ErrorType{}
	for _, e := range errs {
		out[e.Field] = e.Type
	}
	return out
}

func TestRoleRules(t *testing.T) {
	s := RoleStrategy()
	tests := []struct {
		name string
		role *rbacv1.Role
		want map[string]field.ErrorType
	}{
		{"ok", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:reader", Namespace: "d"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}, map[string]field.ErrorType{}},
		{"missing verbs and groups", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "d"},
			Rules: []rbacv1.PolicyRule{{Resources: []string{"pods"}}}},
			map[string]field.ErrorType{"rules[0].verbs": field.ErrorTypeRequired, "rules[0].apiGroups": field.ErrorTypeRequired}},
		{"non-resource URL in a role", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "d"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}},
			map[string]field.ErrorType{"rules[0].nonResourceURLs": field.ErrorTypeInvalid}},
		{"slash in name", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "d"}},
			map[string]field.ErrorType{"metadata.name": field.ErrorTypeInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fields(s.Validate(ctx, tt.role))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for f, typ := range tt.want {
				if got[f] != typ {
					t.Errorf("%s: got %s, want %s", f, got[f], typ)
				}
			}
		})
	}
}

func TestBindings(t *testing.T) {
	s := RoleBindingStrategy()
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "d", ResourceVersion: "1"},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "default"}}}
	s.Default(b)
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName || b.Subjects[1].APIGroup != "" {
		t.Errorf("defaults = %+v", b)
	}
	if errs := s.Validate(ctx, b); len(errs) > 0 {
		t.Fatal(errs)
	}
	n := b.DeepCopy()
	n.RoleRef.Name = "admin"
	if got := fields(s.ValidateUpdate(ctx, n, b)); got["roleRef"] != field.ErrorTypeInvalid {
		t.Errorf("roleRef change: %v", got)
	}

	cs := ClusterRoleBindingStrategy()
	cb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "x"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}, {Kind: "Robot", Name: "r"}}}
	got := fields(cs.Validate(ctx, cb))
	want := map[string]field.ErrorType{
		"roleRef.kind":          field.ErrorTypeNotSupported,
		"subjects[0].namespace": field.ErrorTypeRequired,
		"subjects[1].kind":      field.ErrorTypeNotSupported,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for f, typ := range want {
		if got[f] != typ {
			t.Errorf("%s: got %s, want %s", f, got[f], typ)
		}
	}
}
