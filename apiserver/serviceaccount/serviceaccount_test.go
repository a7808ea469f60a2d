package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func newCAKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSigner(t *testing.T, caKey *ecdsa.PrivateKey, issuer string) *Signer {
	t.Helper()
	s, err := NewSigner(caKey, issuer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func robot() Token {
	return Token{Namespace: "team", ServiceAccount: Ref{Name: "robot", UID: "sa-uid"},
		Audiences: []string{DefaultIssuer}, IssuedAt: t0, Expiry: t0.Add(time.Hour)}
}

// Every server derives the same key from the same CA key, so one
// server's token verifies on another; another CA's servers refuse it.
func TestSignersOfOneCAAgree(t *testing.T) {
	ca := newCAKey(t)
	a, b := newSigner(t, ca, DefaultIssuer), newSigner(t, ca, DefaultIssuer)
	if a.PublicKey().KeyID != b.PublicKey().KeyID {
		t.Fatalf("key IDs differ: %s, %s", a.PublicKey().KeyID, b.PublicKey().KeyID)
	}
	raw, err := a.Issue(robot())
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Verify(raw, []string{DefaultIssuer}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "team" || got.ServiceAccount != (Ref{Name: "robot", UID: "sa-uid"}) || got.Pod != nil || !got.Expiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("verified %+v", got)
	}
	other := newSigner(t, newCAKey(t), DefaultIssuer)
	if _, err := other.Verify(raw, []string{DefaultIssuer}, t0); err == nil || errors.Is(err, ErrOtherIssuer) {
		t.Fatalf("another CA's signer: %v, want a signature error", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	s := newSigner(t, newCAKey(t), DefaultIssuer)
	raw, err := s.Issue(robot())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(raw, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	cases := []struct {
		name      string
		raw       string
		audiences []string
		at        time.Time
		other     bool // left to other authenticators
	}{
		{"expired", raw, []string{DefaultIssuer}, t0.Add(time.Hour + time.Second), false},
		{"not yet valid", raw, []string{DefaultIssuer}, t0.Add(-time.Minute), false},
		{"another audience", raw, []string{"vault"}, t0, false},
		{"bad signature", forged, []string{DefaultIssuer}, t0, false},
		{"not a JWT", "abcdef.0123456789abcdef", []string{DefaultIssuer}, t0, true},
		{"garbage", "a.b.c", []string{DefaultIssuer}, t0, true},
	}
	for _, c := range cases {
		_, err := s.Verify(c.raw, c.audiences, c.at)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
		} else if errors.Is(err, ErrOtherIssuer) != c.other {
			t.Errorf("%s: %v (other issuer: %v, want %v)", c.name, err, errors.Is(err, ErrOtherIssuer), c.other)
		}
	}
	// Another issuer's token, even signed with the same key, is not ours.
	foreign, err := newSigner(t, newCAKey(t), "https://elsewhere").Issue(robot())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(foreign, []string{DefaultIssuer}, t0); !errors.Is(err, ErrOtherIssuer) {
		t.Errorf("another issuer's token: %v, want ErrOtherIssuer", err)
	}
}

type objects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
}

func (o objects) Node(string) (*corev1.Node, bool) { return nil, false }

func (o objects) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := o.secrets[ns+"/"+name]
	return s, ok
}

func (o objects) ServiceAccount(ns, name string) (*corev1.ServiceAccount, bool) {
	sa, ok := o.sas[ns+"/"+name]
	return sa, ok
}

func (o objects) Pod(ns, name string) (*corev1.Pod, bool) {
	p, ok := o.pods[ns+"/"+name]
	return p, ok
}

func bearer(token string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "https://api/version", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// The authenticator names the service account and its groups, and
// refuses a token whose service account or pod is gone or replaced.
func TestAuthenticator(t *testing.T) {
	s := newSigner(t, newCAKey(t), DefaultIssuer)
	objs := objects{
		sas:  map[string]*corev1.ServiceAccount{"team/robot": {ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "sa-uid"}}},
		pods: map[string]*corev1.Pod{"team/web": {ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "pod-uid"}}},
	}
	a := &Authenticator{Signer: s, Audiences: []string{DefaultIssuer}, Objects: objs, Now: func() time.Time { return t0 }}
	issue := func(tok Token) string {
		raw, err := s.Issue(tok)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	u, ok, err := a.Authenticate(bearer(issue(robot())))
	if err != nil || !ok {
		t.Fatalf("authenticate: %v %v", ok, err)
	}
	if u.Name != "system:serviceaccount:team:robot" || u.UID != "sa-uid" ||
		strings.Join(u.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:team" {
		t.Fatalf("user %+v", u)
	}

	bound := robot()
	bound.Pod = &Ref{Name: "web", UID: "pod-uid"}
	if _, ok, err := a.Authenticate(bearer(issue(bound))); err != nil || !ok {
		t.Fatalf("pod-bound token: %v %v", ok, err)
	}
	objs.pods["team/web"] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: types.UID("new-pod")}}
	if _, _, err := a.Authenticate(bearer(issue(bound))); err == nil || !strings.Contains(err.Error(), "pod team/web") {
		t.Fatalf("token of a replaced pod: %v", err)
	}
	delete(objs.sas, "team/robot")
	if _, _, err := a.Authenticate(bearer(issue(robot()))); err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("token of a deleted service account: %v", err)
	}
	// Not ours: the next authenticator decides.
	if _, ok, err := a.Authenticate(bearer("static-token")); ok || err != nil {
		t.Fatalf("a static token: %v %v", ok, err)
	}
}

// A legacy token lives as long as its Secret holds it and its service
// account lives; it has no expiry or audience to check.
func TestLegacyToken(t *testing.T) {
	ca := newCAKey(t)
	s := newSigner(t, ca, DefaultIssuer)
	tok := Token{Namespace: "team", ServiceAccount: Ref{Name: "robot", UID: "sa-uid"}, LegacySecret: "robot-token"}
	raw, err := s.IssueLegacy(tok)
	if err != nil {
		t.Fatal(err)
	}
	// Any issuer setting verifies it: the legacy issuer is fixed.
	got, err := newSigner(t, ca, "https://elsewhere").Verify(raw, []string{"https://elsewhere"}, t0.Add(10*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "team" || got.ServiceAccount != tok.ServiceAccount || got.LegacySecret != "robot-token" || !got.Expiry.IsZero() {
		t.Fatalf("verified %+v", got)
	}
	if _, err := newSigner(t, newCAKey(t), DefaultIssuer).Verify(raw, nil, t0); err == nil || errors.Is(err, ErrOtherIssuer) {
		t.Fatalf("another cluster's legacy token: %v, want a signature error", err)
	}
	if _, err := s.IssueLegacy(robot()); err == nil {
		t.Fatal("a legacy token without a Secret was issued")
	}

	secret := func(data string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Namespace: "team"},
			Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte(data)}}
	}
	objs := objects{
		sas:     map[string]*corev1.ServiceAccount{"team/robot": {ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "sa-uid"}}},
		secrets: map[string]*corev1.Secret{"team/robot-token": secret(raw)},
	}
	a := &Authenticator{Signer: s, Audiences: []string{DefaultIssuer}, Objects: objs}
	u, ok, err := a.Authenticate(bearer(raw))
	if err != nil || !ok || u.Name != "system:serviceaccount:team:robot" || u.UID != "sa-uid" {
		t.Fatalf("authenticate: %+v %v %v", u, ok, err)
	}
	objs.secrets["team/robot-token"] = secret("another token")
	if _, _, err := a.Authenticate(bearer(raw)); err == nil || !strings.Contains(err.Error(), "another token") {
		t.Fatalf("a token its Secret no longer holds: %v", err)
	}
	opaque := secret(raw)
	opaque.Type = corev1.SecretTypeOpaque
	objs.secrets["team/robot-token"] = opaque
	if _, _, err := a.Authenticate(bearer(raw)); err == nil {
		t.Fatal("a token whose Secret is no longer of the service account token type was accepted")
	}
	delete(objs.secrets, "team/robot-token")
	if _, _, err := a.Authenticate(bearer(raw)); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a token whose Secret is deleted: %v", err)
	}
	objs.secrets["team/robot-token"] = secret(raw)
	objs.sas["team/robot"] = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "new-uid"}}
	if _, _, err := a.Authenticate(bearer(raw)); err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("a token of a replaced service account: %v", err)
	}
}
