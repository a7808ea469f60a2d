package templatehash

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func TestPodTemplate(t *testing.T) {
	a, b := template("nginx:1"), template("nginx:2")
	tests := []struct {
		name     string
		x, y     string
		wantSame bool
	}{
		{"stable", PodTemplate(a, nil), PodTemplate(template("nginx:1"), nil), true},
		{"template changes it", PodTemplate(a, nil), PodTemplate(b, nil), false},
		{"collision count changes it", PodTemplate(a, nil), PodTemplate(a, ptr.To[int32](1)), false},
		{"collision counts differ", PodTemplate(a, ptr.To[int32](1)), PodTemplate(a, ptr.To[int32](2)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.x == tt.y) != tt.wantSame {
				t.Fatalf("%q vs %q: same = %v, want %v", tt.x, tt.y, tt.x == tt.y, tt.wantSame)
			}
			for _, h := range []string{tt.x, tt.y} {
				for _, r := range h {
					if !('a' <= r && r <= 'z' || '0' <= r && r <= '9') {
						t.Fatalf("hash %q is not a valid label value fragment", h)
					}
				}
			}
		})
	}
}

func TestRevisionDataRoundTrip(t *testing.T) {
	tmpl := template("nginx:1")
	tmpl.Annotations = map[string]string{"k": "v"}
	data, err := RevisionData(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	again, err := RevisionData(template("nginx:1"))
	if err != nil {
		t.Fatal(err)
	}
	if Revision(data, ptr.To[int32](0)) == Revision(again, ptr.To[int32](0)) {
		t.Fatal("different templates share a revision hash")
	}
	back, err := TemplateFromRevisionData(data)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(back, tmpl) {
		t.Fatalf("round trip: got %+v, want %+v", back, tmpl)
	}
	if Revision(data, nil) == Revision(data, ptr.To[int32](0)) {
		t.Fatal("the probe does not change the revision hash")
	}
}

func TestRevisionName(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct{ prefix, want string }{
		{"web", "web-5d8f"},
		{long, long[:223] + "-5d8f"},
	}
	for _, tt := range tests {
		t.Run(tt.want[:3], func(t *testing.T) {
			if got := RevisionName(tt.prefix, "5d8f"); got != tt.want {
				t.Fatalf("RevisionName = %q, want %q", got, tt.want)
			}
		})
	}
}
