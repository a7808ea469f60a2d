package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodsGetTheirServiceAccountVolume: a new pod runs as "default"
// unless it names an account, and every container gets the token, CA
// and namespace volume, unless the pod or its account opts out or a
// container mounts something of its own there.
func TestPodsGetTheirServiceAccountVolume(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	admin := c.client(0)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		AutomountServiceAccountToken: ptr.To(false), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}},
		}}
		if edit != nil {
			edit(p)
		}
		out, err := admin.CoreV1().Pods("team").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	accessVolume := func(p *corev1.Pod) *corev1.Volume {
		for i, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				return &p.Spec.Volumes[i]
			}
		}
		return nil
	}

	p := pod("plain", nil)
	if p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("service account %q/%q, want default", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
	v := accessVolume(p)
	if v == nil || v.Projected == nil || len(v.Projected.Sources) != 3 {
		t.Fatalf("volumes %+v, want one kube-api-access-* projection of three sources", p.Spec.Volumes)
	}
	src := v.Projected.Sources
	if tok := src[0].ServiceAccountToken; tok == nil || tok.Path != "token" || tok.ExpirationSeconds == nil || *tok.ExpirationSeconds != 3607 {
		t.Errorf("token source %+v", src[0])
	}
	if cm := src[1].ConfigMap; cm == nil || cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Path != "ca.crt" {
		t.Errorf("CA source %+v", src[1])
	}
	if d := src[2].DownwardAPI; d == nil || len(d.Items) != 1 || d.Items[0].Path != "namespace" || d.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("namespace source %+v", src[2])
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		n := 0
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == serviceAccountMountPath && m.ReadOnly {
				n++
			}
		}
		if n != 1 {
			t.Errorf("container %s mounts the volume %d times: %+v", c.Name, n, c.VolumeMounts)
		}
	}

	if p := pod("named", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "robot" }); p.Spec.ServiceAccountName != "robot" || accessVolume(p) == nil {
		t.Errorf("a pod naming robot: %q, volume %v", p.Spec.ServiceAccountName, accessVolume(p) != nil)
	}
	if p := pod("pod-opts-out", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) }); accessVolume(p) != nil {
		t.Error("a pod with automountServiceAccountToken false got the volume")
	}
	if p := pod("account-opts-out", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }); accessVolume(p) != nil {
		t.Error("a pod of an account with automountServiceAccountToken false got the volume")
	} else if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("the account's image pull secrets: %+v", p.Spec.ImagePullSecrets)
	}
	if p := pod("own-secrets", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName, p.Spec.ImagePullSecrets = "quiet", []corev1.LocalObjectReference{{Name: "mine"}}
	}); len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "mine" {
		t.Errorf("a pod's own image pull secrets: %+v", p.Spec.ImagePullSecrets)
	}
	if p := pod("account-overruled", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "quiet", ptr.To(true)
	}); accessVolume(p) == nil {
		t.Error("a pod asking for the token overrules its account, but got no volume")
	}
	own := pod("own-mount", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: serviceAccountMountPath}}
	})
	if got := own.Spec.Containers[0].VolumeMounts; len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("a container with its own mount there: %+v", got)
	}
	if got := own.Spec.Containers[1].VolumeMounts; len(got) != 1 || !strings.HasPrefix(got[0].Name, "kube-api-access-") {
		t.Errorf("its sibling: %+v", got)
	}
}
