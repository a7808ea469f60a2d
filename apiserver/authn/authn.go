// Package authn identifies the user behind an API request: a client
// certificate signed by the cluster CA (CN is the user, O the groups) or a
// bearer token from a token file. Requests with neither are anonymous and
// refused by the API server.
package authn

import (
	"bytes"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
}

// Groups every authenticated user belongs to, as in Kubernetes.
const (
	GroupAuthenticated = "system:authenticated"
)

// Authenticator identifies the user of a request. ok is false when the
// request carries no credentials this authenticator understands; err is set
// when it carries credentials that are wrong.
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// ErrInvalidToken is returned for a bearer token that no user holds.
var ErrInvalidToken = errors.New("authn: invalid bearer token")

// Chain tries authenticators in order; the first that recognizes the
// credentials decides.
type Chain []Authenticator

// Authenticate implements Authenticator.
func (c Chain) Authenticate(r *http.Request) (*User, bool, error) {
	for _, a := range c {
		u, ok, err := a.Authenticate(r)
		if err != nil {
			return nil, false, err
		}
		if ok {
			u.Groups = appendUnique(u.Groups, GroupAuthenticated)
			return u, true, nil
		}
	}
	return nil, false, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ClientCert authenticates by the verified client certificate of the TLS
// connection. The TLS server must verify certificates against the cluster
// CA (tls.VerifyClientCertIfGiven), so any chain present here is trusted.
type ClientCert struct{}

// Authenticate implements Authenticator.
func (ClientCert) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("authn: client certificate has no common name")
	}
	return &User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}, true, nil
}

// TokenFile authenticates bearer tokens listed in a CSV file in
// Kubernetes' --token-auth-file format: token,user,uid[,"group1,group2"].
type TokenFile struct {
	users map[string]*User
}

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authn: reading --token-auth-file: %w", err)
	}
	return ParseTokenFile(bytes.NewReader(b), path)
}

// ParseTokenFile parses token file content; name is used in errors.
func ParseTokenFile(r io.Reader, name string) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	t := &TokenFile{users: map[string]*User{}}
	line := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("authn: %s: %w", name, err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("authn: %s line %d: want token,user,uid[,\"group1,group2\"]", name, line)
		}
		u := &User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		if _, dup := t.users[rec[0]]; dup {
			return nil, fmt.Errorf("authn: %s line %d: duplicate token", name, line)
		}
		t.users[rec[0]] = u
	}
	return t, nil
}

// Authenticate implements Authenticator.
func (t *TokenFile) Authenticate(r *http.Request) (*User, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return nil, false, nil
	}
	for known, u := range t.users {
		if subtle.ConstantTimeCompare([]byte(known), []byte(token)) == 1 {
			c := *u
			c.Groups = append([]string(nil), u.Groups...)
			return &c, true, nil
		}
	}
	return nil, false, ErrInvalidToken
}

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	token := strings.TrimSpace(h[len(prefix):])
	return token, token != ""
}
