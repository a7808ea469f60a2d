package bootstrap

import (
	"strings"
	"testing"
	"time"
)

const testHash = "2366291b26ebdf17b6171b3174d7b8883a79acbdd708f2f08e1ffef5e52f81ee"

func TestParseToken(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Token
		err      string
	}{
		{name: "full token", in: "K10" + testHash + "::abcdef.0123456789abcdef",
			want: Token{CAHash: testHash, ID: "abcdef", Secret: "0123456789abcdef"}},
		{name: "surrounding space from a file", in: "K10" + testHash + "::abcdef.0123456789abcdef\n",
			want: Token{CAHash: testHash, ID: "abcdef", Secret: "0123456789abcdef"}},
		{name: "bare bootstrap token", in: "abcdef.0123456789abcdef", err: "malformed join token"},
		{name: "no CA hash", in: "K10::abcdef.0123456789abcdef", err: "no CA hash"},
		{name: "short hash", in: "K10abc::abcdef.0123456789abcdef", err: "no CA hash"},
		{name: "upper case secret", in: "K10" + testHash + "::abcdef.0123456789ABCDEF", err: "bad id.secret"},
		{name: "short id", in: "K10" + testHash + "::abc.0123456789abcdef", err: "bad id.secret"},
		{name: "k3s server password", in: "K10" + testHash + "::server:secret", err: "bad id.secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseToken(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseToken(%q) = %+v, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseToken(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if again, err := ParseToken(got.String()); err != nil || again != got {
				t.Fatalf("String() does not round-trip: %q -> %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestGenerateTokenIsWellFormedAndRandom(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		tok, err := GenerateToken(testHash)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := ParseBearer(tok.Bearer()); !ok {
			t.Fatalf("generated bearer token %q is malformed", tok.Bearer())
		}
		if seen[tok.Bearer()] {
			t.Fatalf("generated %q twice", tok.Bearer())
		}
		seen[tok.Bearer()] = true
	}
}

func TestTokenSecretRoundTrip(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := Token{CAHash: testHash, ID: "abcdef", Secret: "0123456789abcdef"}
	for _, tc := range []struct {
		name    string
		opts    TokenOptions
		expires time.Time
		server  bool
	}{
		{name: "agent token with a TTL", opts: TokenOptions{TTL: time.Hour, Description: "nodes", Now: now}, expires: now.Add(time.Hour)},
		{name: "server token that never expires", opts: TokenOptions{Server: true, Now: now}, server: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewTokenSecret(tok, tc.opts)
			if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != "bootstrap.kubernetes.io/token" {
				t.Fatalf("secret %s/%s of type %s", s.Namespace, s.Name, s.Type)
			}
			info, secret, err := ReadTokenSecret(s)
			if err != nil {
				t.Fatal(err)
			}
			if secret != tok.Secret || info.ID != tok.ID || info.Description != tc.opts.Description {
				t.Errorf("read back %+v %q", info, secret)
			}
			if !info.Expires.Equal(tc.expires) || info.Server() != tc.server {
				t.Errorf("expires %v server %v, want %v %v", info.Expires, info.Server(), tc.expires, tc.server)
			}
			if info.Expired(now) {
				t.Errorf("a new token is already expired")
			}
			if got := !tc.expires.IsZero(); info.Expired(now.Add(2*time.Hour)) != got {
				t.Errorf("Expired two hours later = %v, want %v", !got, got)
			}
		})
	}
}

func TestReadTokenSecretRefusesMalformedSecrets(t *testing.T) {
	tok := Token{CAHash: testHash, ID: "abcdef", Secret: "0123456789abcdef"}
	for _, tc := range []struct {
		name   string
		mutate func(data map[string][]byte)
		err    string
	}{
		{name: "id not matching the name", mutate: func(d map[string][]byte) { d[KeyTokenID] = []byte("zzzzzz") }, err: "does not match its name"},
		{name: "short secret", mutate: func(d map[string][]byte) { d[KeyTokenSecret] = []byte("abc") }, err: "malformed token"},
		{name: "bad expiration", mutate: func(d map[string][]byte) { d[KeyExpiration] = []byte("tomorrow") }, err: "RFC 3339"},
		{name: "group outside system:bootstrappers", mutate: func(d map[string][]byte) { d[KeyExtraGroups] = []byte("system:masters") }, err: "extra group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewTokenSecret(tok, TokenOptions{})
			tc.mutate(s.Data)
			if _, _, err := ReadTokenSecret(s); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadTokenSecret: %v, want an error saying %q", err, tc.err)
			}
		})
	}
}

func TestServerTokenIDIsStablePerCA(t *testing.T) {
	a, b := ServerTokenID(testHash), ServerTokenID(strings.Repeat("0", 64))
	if a != ServerTokenID(testHash) || a == b {
		t.Fatalf("ServerTokenID: %q, %q", a, b)
	}
	if _, _, ok := ParseBearer(a + ".0123456789abcdef"); !ok {
		t.Fatalf("ServerTokenID %q is not a valid token id", a)
	}
}
