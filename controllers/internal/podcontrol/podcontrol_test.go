package podcontrol

import (
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSlowStartBatch(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		count     int
		failAfter int // calls that succeed before every later call fails; -1 never
		wantOK    int
		wantCalls int
		wantErr   bool
	}{
		{"all succeed", 10, -1, 10, 10, false},
		{"nothing to do", 0, -1, 0, 0, false},
		{"first call fails", 10, 0, 0, 1, true},
		// Batches 1, 2, 4: the fourth call fails, inside the third batch.
		{"fails in the third batch", 10, 3, 3, 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			ok, err := SlowStartBatch(tt.count, SlowStartInitialBatchSize, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if tt.failAfter >= 0 && calls > tt.failAfter {
					return boom
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Fatalf("got %d ok, %d calls, err %v; want %d ok, %d calls, error %v", ok, calls, err, tt.wantOK, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func TestFromTemplate(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	parent := &metav1.ObjectMeta{Name: "web-abc", Namespace: "ns"}
	ref := &metav1.OwnerReference{Name: "web-abc", UID: "u1"}
	pod := FromTemplate(tmpl, parent, ref)
	if pod.GenerateName != "web-abc-" || pod.Namespace != "ns" || pod.Labels["app"] != "web" ||
		pod.Annotations["a"] != "b" || len(pod.OwnerReferences) != 1 || pod.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("pod from template: %+v", pod)
	}
	pod.Labels["app"] = "changed"
	if tmpl.Labels["app"] != "web" {
		t.Fatal("the pod shares its labels with the template")
	}
}
