package downward

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldValue(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels:      map[string]string{"b": "2", "a": "1"},
			Annotations: map[string]string{"note": "say \"hi\"\n"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	ips := PodIPs{PodIPs: []string{"10.1.0.2", "fd00::2"}, HostIPs: []string{"10.0.0.1"}}
	tests := []struct {
		path, want string
		wantErr    bool
	}{
		{path: "metadata.name", want: "p"},
		{path: "metadata.namespace", want: "ns"},
		{path: "metadata.uid", want: "u1"},
		{path: "metadata.labels", want: "a=\"1\"\nb=\"2\""},
		{path: "metadata.annotations", want: `note="say \"hi\"\n"`},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.annotations['none']", want: ""},
		{path: "spec.nodeName", want: "n1"},
		{path: "spec.serviceAccountName", want: "sa"},
		{path: "status.podIP", want: "10.1.0.2"},
		{path: "status.podIPs", want: "10.1.0.2,fd00::2"},
		{path: "status.hostIP", want: "10.0.0.1"},
		{path: "spec.containers", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := FieldValue(pod, tt.path, ips)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResourceValue(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	tests := []struct {
		res, divisor, want string
		wantErr            bool
	}{
		{res: "limits.cpu", want: "2"},
		{res: "limits.cpu", divisor: "1m", want: "1500"},
		{res: "requests.cpu", want: "1"},
		{res: "requests.cpu", divisor: "1m", want: "250"},
		{res: "limits.memory", want: "134217728"},
		{res: "limits.memory", divisor: "1Mi", want: "128"},
		{res: "requests.memory", divisor: "1Mi", want: "128"},
		{res: "limits.ephemeral-storage", divisor: "1Gi", want: "100"},
		{res: "requests.ephemeral-storage", want: "0"},
		{res: "limits.gpu", wantErr: true},
		{res: "cpu", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.res+"/"+tt.divisor, func(t *testing.T) {
			ref := &corev1.ResourceFieldSelector{Resource: tt.res}
			if tt.divisor != "" {
				ref.Divisor = resource.MustParse(tt.divisor)
			}
			got, err := ResourceValue(c, ref, alloc)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
