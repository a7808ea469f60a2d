package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DefaultIssuer is the "iss" of the tokens when --service-account-issuer
// is not given, the value kubeadm clusters use.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// keyInfo separates the derived signing key from any other use of the CA
// key; a new version of the derivation needs a new label.
const keyInfo = "cairn service-account signing key v1"

// Ref names an object a token refers to.
type Ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// LegacyIssuer is the "iss" of the tokens kept in Secrets of type
// kubernetes.io/service-account-token, as Kubernetes spells it. They
// never expire and name no audience: a token lives as long as its
// Secret does.
const LegacyIssuer = "kubernetes/serviceaccount"

// Token is what a service account token says.
type Token struct {
	Namespace      string
	ServiceAccount Ref
	// Pod, Secret or Node is the object the token is bound to, or nil:
	// the token dies with it.
	Pod, Secret, Node *Ref
	// LegacySecret names the Secret that holds a legacy token, which
	// dies with it; empty for the tokens of the TokenRequest API.
	LegacySecret string
	Audiences    []string
	IssuedAt     time.Time
	// Expiry is zero for a legacy token.
	Expiry time.Time
}

// claims are the private claims, in Kubernetes' layout.
type claims struct {
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount Ref    `json:"serviceaccount"`
		Pod            *Ref   `json:"pod,omitempty"`
		Secret         *Ref   `json:"secret,omitempty"`
		Node           *Ref   `json:"node,omitempty"`
	} `json:"kubernetes.io"`
}

// legacyClaims are the private claims of a legacy token, in
// Kubernetes' layout.
type legacyClaims struct {
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
}

// Signer mints and verifies the tokens of one issuer, and the legacy
// tokens of Secrets.
type Signer struct {
	issuer string
	key    *ecdsa.PrivateKey
	keyID  string
	signer jose.Signer
}

// NewSigner derives the signing key from caKey, the cluster CA's private
// key, and returns a signer of tokens for issuer.
func NewSigner(caKey crypto.Signer, issuer string) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: the issuer is empty (--service-account-issuer)")
	}
	der, err := x509.MarshalPKCS8PrivateKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: reading the CA key: %w", err)
	}
	key, err := deriveKey(der)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(pub)
	keyID := base64.RawURLEncoding.EncodeToString(sum[:])
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &Signer{issuer: issuer, key: key, keyID: keyID, signer: signer}, nil
}

// deriveKey turns secret into a P-256 private key: HKDF-SHA256 output
// taken as the scalar, drawing again in the rare case it is out of range.
func deriveKey(secret []byte) (*ecdsa.PrivateKey, error) {
	for i := range 16 {
		scalar, err := hkdf.Key(sha256.New, secret, nil, fmt.Sprintf("%s #%d", keyInfo, i), 32)
		if err != nil {
			return nil, err
		}
		if key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar); err == nil {
			return key, nil
		}
	}
	return nil, errors.New("serviceaccount: no valid signing key derived from the CA key")
}

// Issuer is the "iss" of this signer's tokens.
func (s *Signer) Issuer() string { return s.issuer }

// PublicKey is the key that verifies this signer's tokens, with its ID.
func (s *Signer) PublicKey() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &s.key.PublicKey, KeyID: s.keyID, Algorithm: string(jose.ES256), Use: "sig"}
}

// Issue mints a token saying t.
func (s *Signer) Issue(t Token) (string, error) {
	std := jwt.Claims{
		Issuer:    s.issuer,
		Subject:   subject(t.Namespace, t.ServiceAccount.Name),
		Audience:  jwt.Audience(t.Audiences),
		IssuedAt:  jwt.NewNumericDate(t.IssuedAt),
		NotBefore: jwt.NewNumericDate(t.IssuedAt),
		Expiry:    jwt.NewNumericDate(t.Expiry),
	}
	var priv claims
	priv.Kubernetes.Namespace = t.Namespace
	priv.Kubernetes.ServiceAccount = t.ServiceAccount
	priv.Kubernetes.Pod = t.Pod
	priv.Kubernetes.Secret = t.Secret
	priv.Kubernetes.Node = t.Node
	return jwt.Signed(s.signer).Claims(std).Claims(priv).Serialize()
}

// IssueLegacy mints the never-expiring token of a Secret of type
// kubernetes.io/service-account-token: it says t's namespace, service
// account and Secret, and nothing of audiences, pods or time.
func (s *Signer) IssueLegacy(t Token) (string, error) {
	if t.LegacySecret == "" {
		return "", errors.New("serviceaccount: a legacy token needs the name of its Secret")
	}
	std := jwt.Claims{Issuer: LegacyIssuer, Subject: subject(t.Namespace, t.ServiceAccount.Name)}
	priv := legacyClaims{Namespace: t.Namespace, SecretName: t.LegacySecret,
		ServiceAccountName: t.ServiceAccount.Name, ServiceAccountUID: t.ServiceAccount.UID}
	return jwt.Signed(s.signer).Claims(std).Claims(priv).Serialize()
}

func subject(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ErrOtherIssuer says a bearer token is not one of this signer's (not a
// JWT, or another issuer's), so another authenticator may know it.
var ErrOtherIssuer = errors.New("serviceaccount: not a token of this issuer")

// Verify checks raw's signature, issuer, audience (one of audiences) and
// times at now, and returns what it says. It returns ErrOtherIssuer for
// a token that is not this issuer's. A legacy token has neither
// audience nor times to check: only its Secret can tell whether it
// still holds (see Token.LegacySecret).
func (s *Signer) Verify(raw string, audiences []string, now time.Time) (*Token, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, ErrOtherIssuer
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA})
	if err != nil {
		return nil, ErrOtherIssuer
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, ErrOtherIssuer
	}
	switch unverified.Issuer {
	case s.issuer:
	case LegacyIssuer:
		return s.verifyLegacy(tok)
	default:
		return nil, ErrOtherIssuer
	}
	var std jwt.Claims
	var priv claims
	if err := tok.Claims(&s.key.PublicKey, &std, &priv); err != nil {
		return nil, fmt.Errorf("serviceaccount: token signature: %w", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: s.issuer, AnyAudience: audiences, Time: now}, 0); err != nil {
		return nil, fmt.Errorf("serviceaccount: token: %w", err)
	}
	k := priv.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || std.Subject != subject(k.Namespace, k.ServiceAccount.Name) {
		return nil, errors.New("serviceaccount: token: the subject and the kubernetes.io claims disagree")
	}
	out := &Token{Namespace: k.Namespace, ServiceAccount: k.ServiceAccount, Pod: k.Pod, Secret: k.Secret, Node: k.Node, Audiences: std.Audience}
	if std.IssuedAt != nil {
		out.IssuedAt = std.IssuedAt.Time()
	}
	if std.Expiry != nil {
		out.Expiry = std.Expiry.Time()
	} else {
		return nil, errors.New("serviceaccount: token: no expiry")
	}
	return out, nil
}

// verifyLegacy checks the signature and claims of a legacy token. A
// legacy token of another cluster (another key) fails here rather than
// being passed on: its issuer is the same everywhere.
func (s *Signer) verifyLegacy(tok *jwt.JSONWebToken) (*Token, error) {
	var std jwt.Claims
	var priv legacyClaims
	if err := tok.Claims(&s.key.PublicKey, &std, &priv); err != nil {
		return nil, fmt.Errorf("serviceaccount: token signature: %w", err)
	}
	if priv.Namespace == "" || priv.ServiceAccountName == "" || priv.SecretName == "" ||
		std.Subject != subject(priv.Namespace, priv.ServiceAccountName) {
		return nil, errors.New("serviceaccount: legacy token: the subject and the kubernetes.io claims disagree")
	}
	return &Token{
		Namespace:      priv.Namespace,
		ServiceAccount: Ref{Name: priv.ServiceAccountName, UID: priv.ServiceAccountUID},
		LegacySecret:   priv.SecretName,
	}, nil
}
