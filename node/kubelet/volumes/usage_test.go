package volumes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOverLimit(t *testing.T) {
	m := NewManager(Config{PodsDir: t.TempDir()})
	limit := resource.MustParse("64Ki")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}},
		{Name: "unbounded", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}}
	dir := m.Dir("u1", "empty-dir", "scratch")
	os.MkdirAll(dir, 0o777)
	os.MkdirAll(m.Dir("u1", "empty-dir", "unbounded"), 0o777)
	os.WriteFile(filepath.Join(m.Dir("u1", "empty-dir", "unbounded"), "big"), make([]byte, 1<<20), 0o644)
	steps := []struct {
		name  string
		write int
		over  bool
	}{
		{"empty", 0, false},
		{"under", 16 << 10, false},
		{"over", 256 << 10, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.write > 0 {
				if err := os.WriteFile(filepath.Join(dir, st.name), make([]byte, st.write), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			msg, over := m.OverLimit(pod)
			if over != st.over {
				t.Fatalf("over = %v (%s), usage %d", over, msg, DiskUsage(dir))
			}
			if over && msg != `Usage of EmptyDir volume "scratch" exceeds the limit "64Ki".` {
				t.Errorf("message %q", msg)
			}
		})
	}
}
