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

// Token is what a service account token says.
type Token struct {
	Namespace      string
	ServiceAccount Ref
	// Pod is the pod the token is bound to, or nil: the token dies with
	// the pod.
	Pod       *Ref
	Audiences []string
	IssuedAt  time.Time
	Expiry    time.Time
}

// claims are the private claims, in Kubernetes' layout.
type claims struct {
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount Ref    `json:"serviceaccount"`
		Pod            *Ref   `json:"pod,omitempty"`
	} `json:"kubernetes.io"`
}

// Signer mints and verifies the tokens of one issuer.
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
		Subject:   "system:serviceaccount:" + t.Namespace + ":" + t.ServiceAccount.Name,
		Audience:  jwt.Audience(t.Audiences),
		IssuedAt:  jwt.NewNumericDate(t.IssuedAt),
		NotBefore: jwt.NewNumericDate(t.IssuedAt),
		Expiry:    jwt.NewNumericDate(t.Expiry),
	}
	var priv claims
	priv.Kubernetes.Namespace = t.Namespace
	priv.Kubernetes.ServiceAccount = t.ServiceAccount
	priv.Kubernetes.Pod = t.Pod
	return jwt.Signed(s.signer).Claims(std).Claims(priv).Serialize()
}

// ErrOtherIssuer says a bearer token is not one of this signer's (not a
// JWT, or another issuer's), so another authenticator may know it.
var ErrOtherIssuer = errors.New("serviceaccount: not a token of this issuer")

// Verify checks raw's signature, issuer, audience (one of audiences) and
// times at now, and returns what it says. It returns ErrOtherIssuer for
// a token that is not this issuer's.
func (s *Signer) Verify(raw string, audiences []string, now time.Time) (*Token, error) {
	if strings.Count(raw, ".") != 2 {
		return nil, ErrOtherIssuer
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA})
	if err != nil {
		return nil, ErrOtherIssuer
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != s.issuer {
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
	if k.Namespace == "" || k.ServiceAccount.Name == "" || std.Subject != "system:serviceaccount:"+k.Namespace+":"+k.ServiceAccount.Name {
		return nil, errors.New("serviceaccount: token: the subject and the kubernetes.io claims disagree")
	}
	out := &Token{Namespace: k.Namespace, ServiceAccount: k.ServiceAccount, Pod: k.Pod, Audiences: std.Audience}
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
