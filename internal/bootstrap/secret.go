package bootstrap

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where and how tokens are stored: Kubernetes' bootstrap token Secrets, so
// that kubeadm-style tooling reads them too.
const (
	// SecretNamespace holds the token Secrets.
	SecretNamespace = metav1.NamespaceSystem
	// SecretNamePrefix followed by the token id names a token's Secret.
	SecretNamePrefix = "bootstrap-token-"
	// SecretType is the type of token Secrets.
	SecretType = corev1.SecretTypeBootstrapToken
)

// Keys of a token Secret's data.
const (
	KeyTokenID             = "token-id"
	KeyTokenSecret         = "token-secret"
	KeyExpiration          = "expiration" // RFC 3339; absent: never expires
	KeyDescription         = "description"
	KeyUsageAuthentication = "usage-bootstrap-authentication"
	KeyUsageSigning        = "usage-bootstrap-signing"
	KeyExtraGroups         = "auth-extra-groups" // comma separated
)

// Identities of authenticated bootstrap tokens.
const (
	// UserPrefix followed by the token id is the user of a token.
	UserPrefix = "system:bootstrap:"
	// BootstrappersGroup holds every bootstrap token user.
	BootstrappersGroup = "system:bootstrappers"
	// ServersGroup is the extra group of tokens that may join servers: it
	// lets them fetch the CA key.
	ServersGroup = "system:bootstrappers:cairn:servers"
)

// extraGroupRE is what Kubernetes allows in auth-extra-groups.
var extraGroupRE = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)

// SecretName returns the name of the Secret of the token with id.
func SecretName(id string) string { return SecretNamePrefix + id }

// TokenOptions describe a new token.
type TokenOptions struct {
	// TTL is how long the token is valid; zero: it never expires.
	TTL time.Duration
	// Description is shown by `cairn token list`.
	Description string
	// Server lets the token join servers (ServersGroup), not only agents.
	Server bool
	// Now is the creation time (time.Now when zero).
	Now time.Time
}

// NewTokenSecret returns the Secret that makes t valid.
func NewTokenSecret(t Token, o TokenOptions) *corev1.Secret {
	data := map[string][]byte{
		KeyTokenID:             []byte(t.ID),
		KeyTokenSecret:         []byte(t.Secret),
		KeyUsageAuthentication: []byte("true"),
		KeyUsageSigning:        []byte("true"),
	}
	if o.Description != "" {
		data[KeyDescription] = []byte(o.Description)
	}
	if o.TTL > 0 {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		data[KeyExpiration] = []byte(now.Add(o.TTL).UTC().Format(time.RFC3339))
	}
	if o.Server {
		data[KeyExtraGroups] = []byte(ServersGroup)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(t.ID), Namespace: SecretNamespace},
		Type:       SecretType,
		Data:       data,
	}
}

// TokenInfo is what a token Secret says, without the secret.
type TokenInfo struct {
	ID          string
	Description string
	// Expires is zero for a token that never expires.
	Expires time.Time
	// Usages lists the bootstrap usages (authentication, signing).
	Usages []string
	// Groups are the extra groups the token's user belongs to.
	Groups []string
}

// Server reports whether the token may join servers.
func (i TokenInfo) Server() bool { return slices.Contains(i.Groups, ServersGroup) }

// Expired reports whether the token is expired at now.
func (i TokenInfo) Expired(now time.Time) bool {
	return !i.Expires.IsZero() && !now.Before(i.Expires)
}

// ReadTokenSecret checks that s is a well-formed token Secret and returns
// what it says, and the token's secret.
func ReadTokenSecret(s *corev1.Secret) (info TokenInfo, secret string, err error) {
	if s.Type != SecretType {
		return info, "", fmt.Errorf("bootstrap: secret %s/%s has type %q, not %q", s.Namespace, s.Name, s.Type, SecretType)
	}
	id := string(s.Data[KeyTokenID])
	if SecretName(id) != s.Name {
		return info, "", fmt.Errorf("bootstrap: secret %s/%s holds token id %q, which does not match its name", s.Namespace, s.Name, id)
	}
	secret = string(s.Data[KeyTokenSecret])
	if _, _, ok := ParseBearer(id + "." + secret); !ok {
		return info, "", fmt.Errorf("bootstrap: secret %s/%s holds a malformed token", s.Namespace, s.Name)
	}
	info = TokenInfo{ID: id, Description: string(s.Data[KeyDescription])}
	if exp := string(s.Data[KeyExpiration]); exp != "" {
		if info.Expires, err = time.Parse(time.RFC3339, exp); err != nil {
			return info, "", fmt.Errorf("bootstrap: secret %s/%s: expiration %q is not RFC 3339", s.Namespace, s.Name, exp)
		}
	}
	for _, u := range []string{"authentication", "signing"} {
		if string(s.Data["usage-bootstrap-"+u]) == "true" {
			info.Usages = append(info.Usages, u)
		}
	}
	for _, g := range strings.Split(string(s.Data[KeyExtraGroups]), ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if !extraGroupRE.MatchString(g) {
			return info, "", fmt.Errorf("bootstrap: secret %s/%s: extra group %q does not start with system:bootstrappers:", s.Namespace, s.Name, g)
		}
		info.Groups = append(info.Groups, g)
	}
	return info, secret, nil
}

// ServerTokenID is the id of a cluster's default server token, derived
// from its CA so that servers starting together agree on one token
// instead of racing to create several.
func ServerTokenID(caHash string) string {
	sum := sha256.Sum256([]byte("cairn default server token|" + caHash))
	return hex.EncodeToString(sum[:])[:6]
}
