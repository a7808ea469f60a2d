package bootstrap

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// TokenPrefix starts every join token. It is k3s's prefix, so that
// operators who know k3s recognise what the string is.
const TokenPrefix = "K10"

// tokenFormatHelp is how every malformed-token error describes the format.
const tokenFormatHelp = "want K10<sha256 of the cluster CA>::<id>.<secret>, as written in a server's DATA/token or printed by `cairn token create`"

var (
	bearerRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	hashRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Token is a join token: the CA the joiner must find, and the bootstrap
// token that authenticates it.
type Token struct {
	// CAHash is the hex SHA-256 of the cluster CA certificate (DER).
	CAHash string
	// ID names the token and its Secret; it is not secret.
	ID string
	// Secret proves possession of the token.
	Secret string
}

// String returns the token as users pass it to --token.
func (t Token) String() string {
	return TokenPrefix + t.CAHash + "::" + t.Bearer()
}

// Bearer returns the bootstrap token, id.secret, sent as the bearer token.
func (t Token) Bearer() string { return t.ID + "." + t.Secret }

// ParseToken reads a join token.
func ParseToken(s string) (Token, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok {
		return Token{}, fmt.Errorf("bootstrap: malformed join token: %s", tokenFormatHelp)
	}
	hash, bearer, ok := strings.Cut(rest, "::")
	if !ok || !hashRE.MatchString(hash) {
		return Token{}, fmt.Errorf("bootstrap: malformed join token (no CA hash): %s", tokenFormatHelp)
	}
	id, secret, ok := ParseBearer(bearer)
	if !ok {
		return Token{}, fmt.Errorf("bootstrap: malformed join token (bad id.secret): %s", tokenFormatHelp)
	}
	return Token{CAHash: hash, ID: id, Secret: secret}, nil
}

// ParseBearer splits a bootstrap token "abcdef.0123456789abcdef" into its
// id and secret; ok is false when s does not have that form.
func ParseBearer(s string) (id, secret string, ok bool) {
	m := bearerRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// GenerateToken makes a new random token for the CA with hash caHash.
func GenerateToken(caHash string) (Token, error) {
	id, err := randomString(6)
	if err != nil {
		return Token{}, err
	}
	secret, err := randomString(16)
	if err != nil {
		return Token{}, err
	}
	return Token{CAHash: caHash, ID: id, Secret: secret}, nil
}

// CAHash is the hash a join token pins: the hex SHA-256 of the CA
// certificate's DER encoding (the same as pki.CA.Fingerprint).
func CAHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

const tokenAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// randomString returns n characters drawn uniformly from tokenAlphabet.
func randomString(n int) (string, error) {
	// Bytes at or above the largest multiple of 36 are dropped, so that
	// no character is likelier than another.
	const limit = 256 - 256%len(tokenAlphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("bootstrap: generating a token: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, tokenAlphabet[int(b)%len(tokenAlphabet)])
			}
		}
	}
	return string(out), nil
}
