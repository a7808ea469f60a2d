package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Where a pod finds its service account's credentials, as in Kubernetes:
// token, ca.crt and namespace, which client-go's in-cluster config reads.
const (
	serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	defaultServiceAccount   = "default"
	// rootCAConfigMap is the ConfigMap with the cluster CA every
	// namespace gets (the root CA publisher controller).
	rootCAConfigMap = "kube-root-ca.crt"
	// tokenExpirationSeconds is Kubernetes' lifetime of an automounted
	// token; the kubelet renews it at 80% of that.
	tokenExpirationSeconds = 3607
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// admitServiceAccount is Kubernetes' ServiceAccount admission for a new
// pod: it runs as the "default" service account unless it names one, and,
// unless the pod or its service account turns automountServiceAccountToken
// off, every container gets the account's token, the cluster CA and the
// namespace at serviceAccountMountPath from a projected volume. A pod
// that names no image pull secrets gets its account's.
func (s *Server) admitServiceAccount(ctx context.Context, obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || s.cfg.ServiceAccounts == nil || pod.Annotations[mirrorPodAnnotation] != "" {
		return
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccount
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	// A service account this server does not know (yet) has no say; the
	// kubelet waits for it before it starts the pod.
	sa, err := s.serviceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		sa = &corev1.ServiceAccount{}
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	if !automounts(pod, sa) {
		return
	}
	name := generatedName("kube-api-access-")
	expiration, mode := int64(tokenExpirationSeconds), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		}},
	}})
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: serviceAccountMountPath}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(cs[i], serviceAccountMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
			}
		}
	}
}

// automounts reports whether pod gets its service account's token: the
// pod's automountServiceAccountToken decides, else its account's, else
// yes.
func automounts(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func mountsAt(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}
