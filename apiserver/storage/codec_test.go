package storage

import (
	"bytes"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestCodecWritesKubernetesProtobuf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		newFunc func() runtime.Object
		obj     runtime.Object
		envType string
	}{
		{"pod", func() runtime.Object { return &corev1.Pod{} },
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
			"v1/Pod"},
		{"deployment", func() runtime.Object { return &appsv1.Deployment{} },
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}}, "apps/v1/Deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCodec(scheme.Scheme, tt.newFunc)
			if err != nil {
				t.Fatal(err)
			}
			before := tt.obj.DeepCopyObject()
			data, err := c.Encode(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte("k8s\x00")) {
				t.Fatalf("stored value lacks the k8s protobuf envelope: %q", data[:8])
			}
			if !reflect.DeepEqual(before, tt.obj) {
				t.Fatal("Encode modified the object")
			}
			if gv := c.GroupVersionKind(); gv.GroupVersion().String()+"/"+gv.Kind != tt.envType {
				t.Fatalf("kind %v, want %s", gv, tt.envType)
			}
			got, err := c.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.GetObjectKind().GroupVersionKind() != c.GroupVersionKind() {
				t.Fatalf("decoded TypeMeta %v, want %v", got.GetObjectKind().GroupVersionKind(), c.GroupVersionKind())
			}
			got.GetObjectKind().SetGroupVersionKind(tt.obj.GetObjectKind().GroupVersionKind())
			if !reflect.DeepEqual(got, tt.obj) {
				t.Fatalf("round trip changed the object:\n%#v\n%#v", got, tt.obj)
			}
		})
	}
}

func TestCodecRefusesAnotherKind(t *testing.T) {
	t.Parallel()
	pods, _ := NewCodec(scheme.Scheme, func() runtime.Object { return &corev1.Pod{} })
	cms, _ := NewCodec(scheme.Scheme, func() runtime.Object { return &corev1.ConfigMap{} })
	data, err := pods.Encode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Decode(data); err == nil {
		t.Fatal("a configmap codec decoded a pod")
	}
	if _, err := cms.Decode([]byte("{}")); err == nil {
		t.Fatal("decoded JSON as protobuf")
	}
	if _, err := NewCodec(runtime.NewScheme(), func() runtime.Object { return &corev1.Pod{} }); err == nil {
		t.Fatal("a codec for an unregistered type")
	}
}
