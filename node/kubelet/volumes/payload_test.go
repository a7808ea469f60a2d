package volumes

import (
	"os"
	"strings"
	"testing"

	"cairn/node/kubelet/downward"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func contents(p map[string]File) map[string]string {
	out := map[string]string{}
	for k, f := range p {
		out[k] = string(f.Data) + "|" + f.Mode.String()
	}
	return out
}

func TestConfigMapAndSecretPayloads(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Data: map[string][]byte{"user": []byte("alice")}}
	tests := []struct {
		name    string
		build   func() (map[string]File, error)
		want    map[string]string
		wantErr string
	}{
		{
			name:  "all keys with the default mode",
			build: func() (map[string]File, error) { return ConfigMapPayload(cm, nil, nil, false) },
			want:  map[string]string{"a": "1|-rw-r--r--", "b": "2|-rw-r--r--", "bin": "\x00\x01|-rw-r--r--"},
		},
		{
			name: "items with paths and modes",
			build: func() (map[string]File, error) {
				return ConfigMapPayload(cm, []corev1.KeyToPath{{Key: "a", Path: "dir/a.txt", Mode: ptr.To[int32](0o600)}, {Key: "b", Path: "b"}}, ptr.To[int32](0o440), false)
			},
			want: map[string]string{"dir/a.txt": "1|-rw-------", "b": "2|-r--r-----"},
		},
		{
			name: "missing item key",
			build: func() (map[string]File, error) {
				return ConfigMapPayload(cm, []corev1.KeyToPath{{Key: "z", Path: "z"}}, nil, false)
			},
			wantErr: "configured to use key z of configmap cfg, which does not exist",
		},
		{
			name: "missing item key, optional",
			build: func() (map[string]File, error) {
				return ConfigMapPayload(cm, []corev1.KeyToPath{{Key: "z", Path: "z"}}, nil, true)
			},
			want: map[string]string{},
		},
		{
			name:  "missing optional config map",
			build: func() (map[string]File, error) { return ConfigMapPayload(nil, nil, nil, true) },
			want:  map[string]string{},
		},
		{
			name:  "secret",
			build: func() (map[string]File, error) { return SecretPayload(sec, nil, ptr.To[int32](0o400), false) },
			want:  map[string]string{"user": "alice|-r--------"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.build()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := contents(got)
			if len(c) != len(tt.want) {
				t.Fatalf("got %v, want %v", c, tt.want)
			}
			for k, v := range tt.want {
				if c[k] != v {
					t.Errorf("%s = %q, want %q", k, c[k], v)
				}
			}
		})
	}
}

func TestDownwardPayload(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x", "tier": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}}},
	}
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
	}
	got, err := DownwardPayload(pod, items, nil, downward.PodIPs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": "p", "labels": "app=\"x\"\ntier=\"web\"", "mem": "32"}
	for k, v := range want {
		if string(got[k].Data) != v || got[k].Mode != os.FileMode(0o644) {
			t.Errorf("%s = %q %v, want %q", k, got[k].Data, got[k].Mode, v)
		}
	}
	if _, err := DownwardPayload(pod, []corev1.DownwardAPIVolumeFile{{Path: "x",
		ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}}}, nil, downward.PodIPs{}, nil); err == nil {
		t.Error("resource of an unknown container accepted")
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	os.WriteFile(file, []byte("x"), 0o644)
	tests := []struct {
		name    string
		path    string
		typ     corev1.HostPathType
		wantErr bool
	}{
		{"unset, missing is fine", dir + "/missing", corev1.HostPathUnset, false},
		{"directory", dir, corev1.HostPathDirectory, false},
		{"file is not a directory", file, corev1.HostPathDirectory, true},
		{"directory or create", dir + "/new/deeper", corev1.HostPathDirectoryOrCreate, false},
		{"file", file, corev1.HostPathFile, false},
		{"file or create", dir + "/created", corev1.HostPathFileOrCreate, false},
		{"missing file", dir + "/nofile", corev1.HostPathFile, true},
		{"socket", file, corev1.HostPathSocket, true},
		{"char device", "/dev/null", corev1.HostPathCharDev, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostPath(&corev1.HostPathVolumeSource{Path: tt.path, Type: &tt.typ})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && tt.typ != corev1.HostPathUnset {
				if _, err := os.Stat(tt.path); err != nil {
					t.Errorf("path not there: %v", err)
				}
			}
		})
	}
}
