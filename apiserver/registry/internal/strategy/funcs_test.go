package strategy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestNilFuncsDoNothing(t *testing.T) {
	var f Funcs[*corev1.Pod]
	p := &corev1.Pod{}
	f.Default(p)
	f.PrepareForCreate(context.Background(), p)
	f.PrepareForUpdate(context.Background(), p, p)
	f.PrepareStatusForUpdate(context.Background(), p, p)
	if f.Validate(context.Background(), p) != nil || f.ValidateUpdate(context.Background(), p, p) != nil || f.SpecChanged(p, p) {
		t.Error("nil functions must be no-ops")
	}
}

func TestWrongTypeNamesBothTypes(t *testing.T) {
	f := Funcs[*corev1.Pod]{ValidateFunc: func(context.Context, *corev1.Pod) field.ErrorList { return nil }}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "*v1.Pod") || !strings.Contains(msg, "*v1.Service") {
			t.Errorf("panic = %q", msg)
		}
	}()
	f.Validate(context.Background(), &corev1.Service{})
}
