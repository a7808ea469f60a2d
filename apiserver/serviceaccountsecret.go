package apiserver

import (
	"context"
	"fmt"

	"cairn/apiserver/serviceaccount"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// admitTokenSecret fills a Secret of type kubernetes.io/service-account-token,
// as Kubernetes' tokens controller does, but in the write itself: the
// Secret is stored with its service account's uid annotation and a
// never-expiring token, ca.crt and namespace, so a client reads them
// back at once. Keys the Secret already has are kept, and a token
// removed by an update is issued again.
//
// A new Secret's service account must exist: Kubernetes would store the
// Secret and then delete it, and refusing it says why. An update of a
// Secret whose account is gone is let through unchanged, so that it can
// still lose its finalizers; its token no longer works.
func (s *Server) admitTokenSecret(ctx context.Context, obj runtime.Object, creating bool) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Type != corev1.SecretTypeServiceAccountToken || s.cfg.ServiceAccounts == nil {
		return nil
	}
	annotations := field.NewPath("metadata", "annotations")
	name := secret.Annotations[corev1.ServiceAccountNameKey]
	if name == "" {
		return nil // validation says what is missing
	}
	sa, err := s.serviceAccount(ctx, secret.Namespace, name)
	stale := err == nil && secret.Annotations[corev1.ServiceAccountUIDKey] != "" && secret.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID)
	if !creating && (apierrors.IsNotFound(err) || stale) {
		return nil
	}
	if apierrors.IsNotFound(err) {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Secret").GroupKind(), secret.Name, field.ErrorList{
			field.Invalid(annotations.Key(corev1.ServiceAccountNameKey), name,
				fmt.Sprintf("service account %s/%s does not exist: create it before its token Secret", secret.Namespace, name)),
		})
	}
	if err != nil {
		return err
	}
	if stale {
		uid := secret.Annotations[corev1.ServiceAccountUIDKey]
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Secret").GroupKind(), secret.Name, field.ErrorList{
			field.Invalid(annotations.Key(corev1.ServiceAccountUIDKey), uid,
				fmt.Sprintf("service account %s/%s is another one now (uid %s): remove this annotation to issue a token for it", secret.Namespace, name, sa.UID)),
		})
	}
	secret.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	if len(secret.Data[corev1.ServiceAccountTokenKey]) == 0 {
		raw, err := s.cfg.ServiceAccounts.Signer.IssueLegacy(serviceaccount.Token{
			Namespace: secret.Namespace, ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: string(sa.UID)}, LegacySecret: secret.Name,
		})
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		secret.Data[corev1.ServiceAccountTokenKey] = []byte(raw)
	}
	if ca := s.cfg.ServiceAccounts.CACert; len(secret.Data[corev1.ServiceAccountRootCAKey]) == 0 && len(ca) > 0 {
		secret.Data[corev1.ServiceAccountRootCAKey] = ca
	}
	if len(secret.Data[corev1.ServiceAccountNamespaceKey]) == 0 {
		secret.Data[corev1.ServiceAccountNamespaceKey] = []byte(secret.Namespace)
	}
	return nil
}
