package apiserver

import (
	"context"
	"fmt"
	"sync"
	"time"

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

// legacyTokenUses labels a token Secret with the day its token was last
// used (kubernetes.io/legacy-token-last-used), as Kubernetes does, so that
// `kubectl get secrets -L kubernetes.io/legacy-token-last-used` shows
// which long-lived tokens are still in use. Each Secret is written at
// most once a day by each API server, off the request's path.
type legacyTokenUses struct {
	s *Server

	mu     sync.Mutex
	day    string
	marked map[string]bool // namespace/name, for day
}

func (u *legacyTokenUses) used(namespace, name string) {
	day := time.Now().UTC().Format(time.DateOnly)
	key := namespace + "/" + name
	u.mu.Lock()
	if u.day != day {
		u.day, u.marked = day, map[string]bool{}
	}
	seen := u.marked[key]
	u.marked[key] = true
	u.mu.Unlock()
	if seen {
		return
	}
	if secret, ok := cachedGet[*corev1.Secret](u.s, "secrets", namespace, name); ok && secret.Labels[serviceaccount.LabelLegacyTokenLastUsed] == day {
		return // another API server, or this one before a restart
	}
	go u.mark(namespace, name, day)
}

func (u *legacyTokenUses) mark(namespace, name, day string) {
	h, ok := u.s.handlers[corev1.SchemeGroupVersion.WithResource("secrets")]
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := h.store.GuaranteedUpdate(ctx, h.key(namespace, name), nil, func(current runtime.Object) (runtime.Object, error) {
		secret, ok := current.(*corev1.Secret)
		if !ok {
			return nil, fmt.Errorf("apiserver: secret %s/%s is a %T", namespace, name, current)
		}
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[serviceaccount.LabelLegacyTokenLastUsed] = day
		return secret, nil
	}, false)
	if err != nil && !apierrors.IsNotFound(err) {
		u.s.log.Warn("recording the use of a legacy service account token failed", "secret", namespace+"/"+name, "err", err)
		u.mu.Lock()
		delete(u.marked, namespace+"/"+name) // the next use tries again
		u.mu.Unlock()
	}
}
