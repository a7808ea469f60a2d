package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"cairn/node/kubelet/downward"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestSetupRefreshesConfigMapVolumes(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}},
	)
	m := NewManager(Config{PodsDir: t.TempDir(), Client: cs})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "opt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "none"}, Optional: ptr.To(true)}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}},
	}
	ctx := context.Background()
	vols, err := m.Setup(ctx, pod, downward.PodIPs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(filepath.Join(vols["cfg"].Path, "k"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "v1" {
		t.Fatalf("k = %q", got)
	}
	if !vols["cfg"].ReadOnly || vols["scratch"].ReadOnly {
		t.Errorf("read-only flags wrong: %+v", vols)
	}
	if info, err := os.Stat(vols["scratch"].Path); err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir %v %v", info, err)
	}
	cs.CoreV1().ConfigMaps("ns").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v2"}}, metav1.UpdateOptions{})
	if _, err := m.Setup(ctx, pod, downward.PodIPs{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "v2" {
		t.Fatalf("after update k = %q", got)
	}
	uids, err := m.PodUIDs()
	if err != nil || len(uids) != 1 || uids[0] != "u1" {
		t.Fatalf("PodUIDs = %v, %v", uids, err)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
}

func TestSetupNamesTheFailingVolume(t *testing.T) {
	m := NewManager(Config{PodsDir: t.TempDir(), Client: fake.NewClientset()})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}},
		}},
	}
	_, err := m.Setup(context.Background(), pod, downward.PodIPs{}, nil)
	want := `MountVolume.SetUp failed for volume "creds" : secrets "missing" not found`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}
