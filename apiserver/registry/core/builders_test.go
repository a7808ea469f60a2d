package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podBuilder keeps pod table tests short: testPod("a").image("nginx:1").
type podBuilder struct{ *corev1.Pod }

func testPod(name string) podBuilder {
	return podBuilder{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-1", ResourceVersion: "1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}}
}

func (b podBuilder) image(img string) podBuilder { b.Spec.Containers[0].Image = img; return b }

func (b podBuilder) port(p int32) podBuilder {
	b.Spec.Containers[0].Ports = append(b.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: p})
	return b
}

func (b podBuilder) req(name, q string) podBuilder {
	c := &b.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(q)
	return b
}

func (b podBuilder) limit(name, q string) podBuilder {
	c := &b.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = resource.MustParse(q)
	return b
}

func (b podBuilder) with(f func(*corev1.Pod)) podBuilder { f(b.Pod); return b }

// wantErr is one expected validation error: where and what kind.
type wantErr struct {
	field string
	typ   field.ErrorType
}

// checkErrs fails unless errs are exactly want, in any order.
func checkErrs(t *testing.T, errs field.ErrorList, want ...wantErr) {
	t.Helper()
	got := map[wantErr]int{}
	for _, e := range errs {
		got[wantErr{e.Field, e.Type}]++
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Errorf("missing error %s %s; got %v", w.field, w.typ, errs)
			continue
		}
		got[w]--
	}
	for w, n := range got {
		if n > 0 {
			t.Errorf("unexpected error %s %s; all: %v", w.field, w.typ, errs)
		}
	}
}

var ctx = context.Background()

// createPod runs a pod through the create path as the HTTP layer does.
func createPod(p *corev1.Pod) field.ErrorList {
	s := PodStrategy()
	s.Default(p)
	s.PrepareForCreate(ctx, p)
	return s.Validate(ctx, p)
}
