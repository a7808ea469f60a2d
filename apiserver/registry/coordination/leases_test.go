package coordination

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLeaseValidation(t *testing.T) {
	ctx := context.Background()
	s := LeaseStrategy()
	tests := []struct {
		name  string
		spec  coordinationv1.LeaseSpec
		field string
	}{
		{"ok", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)}, ""},
		{"zero duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}, "spec.leaseDurationSeconds"},
		{"negative transitions", coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}, "spec.leaseTransitions"},
		{"preferred holder without strategy", coordinationv1.LeaseSpec{PreferredHolder: ptr.To("b")}, "spec.preferredHolder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease", ResourceVersion: "1"}, Spec: tt.spec}
			errs := s.Validate(ctx, l)
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				if errs := s.ValidateUpdate(ctx, l.DeepCopy(), l); len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tt.field {
				t.Errorf("got %v, want one error on %s", errs, tt.field)
			}
		})
	}
}
