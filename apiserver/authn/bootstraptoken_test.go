package authn

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/bootstrap"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBootstrapTokens(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	hash := strings.Repeat("a", 64)
	agent := bootstrap.Token{CAHash: hash, ID: "agent1", Secret: "0123456789abcdef"}
	server := bootstrap.Token{CAHash: hash, ID: "serve1", Secret: "0123456789abcdef"}
	expired := bootstrap.Token{CAHash: hash, ID: "old111", Secret: "0123456789abcdef"}
	signing := bootstrap.Token{CAHash: hash, ID: "sign11", Secret: "0123456789abcdef"}
	deleting := bootstrap.Token{CAHash: hash, ID: "gone11", Secret: "0123456789abcdef"}
	secrets := map[string]*corev1.Secret{
		agent.ID:    bootstrap.NewTokenSecret(agent, bootstrap.TokenOptions{TTL: time.Hour, Now: now}),
		server.ID:   bootstrap.NewTokenSecret(server, bootstrap.TokenOptions{Server: true}),
		expired.ID:  bootstrap.NewTokenSecret(expired, bootstrap.TokenOptions{TTL: time.Hour, Now: now.Add(-2 * time.Hour)}),
		signing.ID:  bootstrap.NewTokenSecret(signing, bootstrap.TokenOptions{}),
		deleting.ID: bootstrap.NewTokenSecret(deleting, bootstrap.TokenOptions{}),
	}
	delete(secrets[signing.ID].Data, bootstrap.KeyUsageAuthentication)
	secrets[deleting.ID].DeletionTimestamp = &metav1.Time{Time: now}
	files, err := ParseTokenFile(strings.NewReader("filetoken,alice,1\nabcdef.aaaaaaaaaaaaaaaa,bob,2\n"), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	var expiredSeen []string
	auth := &BootstrapTokens{
		Lookup: func(_ context.Context, id string) (*corev1.Secret, error) { return secrets[id], nil },
		Next:   files, Now: func() time.Time { return now },
		Expired: func(id string) { expiredSeen = append(expiredSeen, id) },
	}
	for _, tc := range []struct {
		name, bearer string
		user         string
		groups       []string
		err          string
	}{
		{name: "agent token", bearer: agent.Bearer(), user: "system:bootstrap:agent1", groups: []string{"system:bootstrappers"}},
		{name: "server token carries its extra group", bearer: server.Bearer(), user: "system:bootstrap:serve1",
			groups: []string{"system:bootstrappers", bootstrap.ServersGroup}},
		{name: "wrong secret", bearer: agent.ID + ".ffffffffffffffff", err: "no such token, or a wrong secret"},
		{name: "unknown id", bearer: "zzzzzz.0123456789abcdef", err: "no such token, or a wrong secret"},
		{name: "expired", bearer: expired.Bearer(), err: "expired at"},
		{name: "not for authentication", bearer: signing.Bearer(), err: "may not be used for authentication"},
		{name: "being deleted", bearer: deleting.Bearer(), err: "being deleted"},
		{name: "a token file token goes to the next authenticator", bearer: "filetoken", user: "alice"},
		{name: "a bootstrap-shaped token only the token file knows", bearer: "abcdef.aaaaaaaaaaaaaaaa", user: "bob"},
		{name: "no token", bearer: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			u, ok, err := auth.Authenticate(r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Authenticate: %+v %v %v; want an error saying %q", u, ok, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.user == "" {
				if ok {
					t.Fatalf("authenticated %+v without credentials", u)
				}
				return
			}
			if !ok || u.Name != tc.user {
				t.Fatalf("Authenticate: %+v %v, want user %s", u, ok, tc.user)
			}
			for _, g := range tc.groups {
				if !slices.Contains(u.Groups, g) {
					t.Errorf("groups %v lack %s", u.Groups, g)
				}
			}
			if IsBootstrapUser(u) != slices.Contains(tc.groups, bootstrap.BootstrappersGroup) {
				t.Errorf("IsBootstrapUser(%+v) = %v", u, IsBootstrapUser(u))
			}
		})
	}
	if !slices.Equal(expiredSeen, []string{expired.ID}) {
		t.Errorf("expired tokens reported for cleanup: %v, want [%s]", expiredSeen, expired.ID)
	}
}
