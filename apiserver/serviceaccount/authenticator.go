package serviceaccount

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"time"

	"cairn/apiserver/authn"

	corev1 "k8s.io/api/core/v1"
)

// Labels of the Secrets that hold legacy tokens, as Kubernetes names
// them: the day (UTC, YYYY-MM-DD) the token was last used, and the day
// from which it no longer works.
const (
	LabelLegacyTokenLastUsed     = "kubernetes.io/legacy-token-last-used"
	LabelLegacyTokenInvalidSince = "kubernetes.io/legacy-token-invalid-since"
)

// Groups every service account belongs to, as in Kubernetes.
const (
	GroupAll             = "system:serviceaccounts"
	groupNamespacePrefix = "system:serviceaccounts:"
)

// Objects looks up the objects a token refers to, as this API server
// sees them now; a token outlives neither.
type Objects interface {
	ServiceAccount(namespace, name string) (*corev1.ServiceAccount, bool)
	Pod(namespace, name string) (*corev1.Pod, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
	Node(name string) (*corev1.Node, bool)
}

// Authenticator identifies service accounts by their bearer tokens.
type Authenticator struct {
	Signer *Signer
	// Audiences are the API's audiences: a token must name one.
	Audiences []string
	Objects   Objects
	// LegacyUsed, when set, is told of each accepted legacy token, by its
	// Secret, to record the use (LabelLegacyTokenLastUsed).
	LegacyUsed func(namespace, secret string)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Authenticate implements authn.Authenticator. A bearer token of another
// issuer is left to the next authenticator.
func (a *Authenticator) Authenticate(r *http.Request) (*authn.User, bool, error) {
	raw, ok := authn.BearerToken(r)
	if !ok {
		return nil, false, nil
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	t, err := a.Signer.Verify(raw, a.Audiences, now)
	if errors.Is(err, ErrOtherIssuer) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if t.LegacySecret != "" {
		if err := a.checkLegacySecret(t, raw); err != nil {
			return nil, false, err
		}
	}
	sa, ok := a.Objects.ServiceAccount(t.Namespace, t.ServiceAccount.Name)
	if !ok || sa.DeletionTimestamp != nil || string(sa.UID) != t.ServiceAccount.UID {
		return nil, false, fmt.Errorf("serviceaccount: the token's service account %s/%s (uid %s) no longer exists",
			t.Namespace, t.ServiceAccount.Name, t.ServiceAccount.UID)
	}
	if t.Pod != nil {
		pod, ok := a.Objects.Pod(t.Namespace, t.Pod.Name)
		if !ok || string(pod.UID) != t.Pod.UID {
			return nil, false, fmt.Errorf("serviceaccount: the pod %s/%s (uid %s) the token is bound to no longer exists",
				t.Namespace, t.Pod.Name, t.Pod.UID)
		}
	}
	if t.Secret != nil {
		secret, ok := a.Objects.Secret(t.Namespace, t.Secret.Name)
		if !ok || secret.DeletionTimestamp != nil || string(secret.UID) != t.Secret.UID {
			return nil, false, fmt.Errorf("serviceaccount: the Secret %s/%s (uid %s) the token is bound to no longer exists",
				t.Namespace, t.Secret.Name, t.Secret.UID)
		}
	}
	if t.Node != nil {
		node, ok := a.Objects.Node(t.Node.Name)
		if !ok || node.DeletionTimestamp != nil || string(node.UID) != t.Node.UID {
			return nil, false, fmt.Errorf("serviceaccount: the node %s (uid %s) the token is bound to no longer exists", t.Node.Name, t.Node.UID)
		}
	}
	if t.LegacySecret != "" && a.LegacyUsed != nil {
		a.LegacyUsed(t.Namespace, t.LegacySecret)
	}
	return UserOf(t.Namespace, t.ServiceAccount.Name, t.ServiceAccount.UID), true, nil
}

// checkLegacySecret checks that the Secret a legacy token names still
// holds it: deleting the Secret, or replacing its token, revokes the
// token.
func (a *Authenticator) checkLegacySecret(t *Token, raw string) error {
	secret, ok := a.Objects.Secret(t.Namespace, t.LegacySecret)
	if !ok || secret.DeletionTimestamp != nil || secret.Type != corev1.SecretTypeServiceAccountToken {
		return fmt.Errorf("serviceaccount: the token's Secret %s/%s no longer exists: the token was revoked", t.Namespace, t.LegacySecret)
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(raw)) != 1 {
		return fmt.Errorf("serviceaccount: the Secret %s/%s holds another token now: this one was revoked", t.Namespace, t.LegacySecret)
	}
	if since, ok := secret.Labels[LabelLegacyTokenInvalidSince]; ok {
		return fmt.Errorf("serviceaccount: the token of Secret %s/%s was marked invalid (label %s=%s); remove the label to use it again",
			t.Namespace, t.LegacySecret, LabelLegacyTokenInvalidSince, since)
	}
	return nil
}

// UserOf is the user a service account authenticates as.
func UserOf(namespace, name, uid string) *authn.User {
	return &authn.User{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		UID:    uid,
		Groups: []string{GroupAll, groupNamespacePrefix + namespace},
	}
}
