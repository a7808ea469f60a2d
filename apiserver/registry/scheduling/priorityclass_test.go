package scheduling

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPriorityClassRules(t *testing.T) {
	s := PriorityClassStrategy()
	ctx := context.Background()
	class := func(name string, value int32) *schedulingv1.PriorityClass {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		s.Default(pc)
		return pc
	}
	for _, tc := range []struct {
		name string
		pc   *schedulingv1.PriorityClass
		want string // a substring of the error, "" for valid
	}{
		{"user class", class("batch", 1000), ""},
		{"highest user value", class("top", HighestUserDefinablePriority), ""},
		{"above the user range", class("too-high", HighestUserDefinablePriority+1), "maximum allowed value of a user defined priority is 1000000000"},
		{"reserved prefix", class("system-mine", 10), "reserved for system use only"},
		{"built-in class", SystemClasses()[1], ""},
		{"built-in name with another value", class(SystemNodeCritical, 5), "reserved for system use only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := s.Validate(ctx, tc.pc)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
	if p := class("x", 1).PreemptionPolicy; p == nil || *p != corev1.PreemptLowerPriority {
		t.Errorf("default preemptionPolicy %v", p)
	}
	old := class("batch", 1000)
	old.ResourceVersion = "7"
	changed := old.DeepCopy()
	changed.Value = 2000
	never := corev1.PreemptNever
	changed.PreemptionPolicy = &never
	errs := s.ValidateUpdate(ctx, changed, old)
	if msg := errs.ToAggregate().Error(); !strings.Contains(msg, "value: Forbidden") || !strings.Contains(msg, "preemptionPolicy") {
		t.Errorf("an update of value and preemptionPolicy gave %v", errs)
	}
	desc := old.DeepCopy()
	desc.Description = "now described"
	if errs := s.ValidateUpdate(ctx, desc, old); len(errs) > 0 {
		t.Errorf("a description update was refused: %v", errs)
	}
}
