package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServersJoinWithTokens grows a one-server cluster with join tokens
// (no CA copied by hand), refuses bad tokens with errors that say why,
// manages tokens with `cairn token`, and shrinks the cluster with
// `cairn server remove`.
func TestServersJoinWithTokens(t *testing.T) {
	c := newTokenCluster(t, "s1")
	c.bootstrap(t)
	s1 := c.member(t, "s1")
	token := serverToken(t, s1)
	admin := c.kubeconfig(t, s1)
	if !strings.HasPrefix(token, "K10"+caHash(t, c.pki)+"::") {
		t.Fatalf("DATA/token %q does not pin the cluster CA", token)
	}
	if fi, err := os.Stat(filepath.Join(s1.dataDir, "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("DATA/token must be 0600: %v %v", fi.Mode(), err)
	}

	t.Run("token create, list and delete", func(t *testing.T) {
		created := strings.TrimSpace(mustRun(t, "token", "create", "--kubeconfig", admin, "--ttl", "1h", "--description", "e2e agents").stdout)
		if !strings.HasPrefix(created, "K10"+caHash(t, c.pki)+"::") {
			t.Fatalf("token create printed %q, want a K10 token pinning the cluster CA", created)
		}
		id := created[strings.Index(created, "::")+2:][:6]
		list := mustRun(t, "token", "list", "--kubeconfig", admin).stdout
		row := lineWith(list, id)
		if !strings.Contains(row, "e2e agents") || !strings.Contains(row, "agents") || strings.Contains(row, "servers") {
			t.Errorf("token list shows the new token as %q:\n%s", row, list)
		}
		if def := lineWith(list, token[strings.Index(token, "::")+2:][:6]); !strings.Contains(def, "servers,agents") || !strings.Contains(def, "<never>") {
			t.Errorf("token list shows the default server token as %q:\n%s", def, list)
		}
		if strings.Contains(list, created[strings.Index(created, ".")+1:]) {
			t.Errorf("token list prints a token's secret:\n%s", list)
		}
		mustRun(t, "token", "delete", "--kubeconfig", admin, id)
		if list := mustRun(t, "token", "list", "--kubeconfig", admin).stdout; strings.Contains(list, id) {
			t.Errorf("token %s still listed after delete:\n%s", id, list)
		}
		runRefused(t, []string{"no token with id"}, "token", "delete", "--kubeconfig", admin, id)
	})

	t.Run("bad tokens are refused with the reason", func(t *testing.T) {
		expired := strings.TrimSpace(mustRun(t, "token", "create", "--kubeconfig", admin, "--ttl", "1s").stdout)
		agentOnly := strings.TrimSpace(mustRun(t, "token", "create", "--kubeconfig", admin).stdout)
		deleted := strings.TrimSpace(mustRun(t, "token", "create", "--kubeconfig", admin, "--server").stdout)
		mustRun(t, "token", "delete", "--kubeconfig", admin, deleted)
		time.Sleep(1100 * time.Millisecond)
		sep := strings.Index(token, "::")
		wrongSecret := token[:len(token)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(token, "a")]
		foreignCA := "K10" + caHash(t, pkiInit(t)) + token[sep:]
		for _, tc := range []struct {
			name, token string
			want        []string
		}{
			{"wrong secret", wrongSecret, []string{"refused the token", "no such token, or a wrong secret"}},
			{"expired", expired, []string{"refused the token", "expired at"}},
			{"deleted", deleted, []string{"refused the token", "no such token"}},
			{"CA hash of another cluster", foreignCA, []string{"the server's CA does not match the token's hash: wrong token or a man in the middle"}},
			{"agent token joining a server", agentOnly, []string{"may not join servers", "--server"}},
			{"malformed", "not-a-token", []string{"--token", "malformed join token"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := c.newJoiner(t, "refused-"+strings.ReplaceAll(tc.name, " ", "-"))
				runRefused(t, tc.want, c.joinArgs(m, s1, tc.token)...)
				if _, err := os.Stat(filepath.Join(m.dataDir, "member.json")); err == nil {
					t.Errorf("a refused join left a member data dir")
				}
				if _, err := os.Stat(filepath.Join(m.dataDir, "pki", "ca.key")); err == nil {
					t.Errorf("a refused join left the CA key on disk")
				}
			})
		}
		t.Run("agent with a wrong token", func(t *testing.T) {
			runRefused(t, []string{"refused the token", "no such token, or a wrong secret"},
				"agent", "--server", c.apiURL(s1), "--token", wrongSecret, "--node-name", "refused", "--data-dir", t.TempDir())
		})
		if log := s1.log(); !strings.Contains(log, "refused a bootstrap token") || !strings.Contains(log, "expired at") {
			t.Errorf("s1's log does not record the refused tokens:\n%s", s1.logTail(20))
		}
	})

	t.Run("servers join with the token and serve the API", func(t *testing.T) {
		s2 := c.joinWithToken(t, "s2", s1, token)
		// The third joins through the second: any server hands out joins.
		s3 := c.joinWithToken(t, "s3", s2, token)
		list := waitForMember(t, c.cluster, "s3")
		if len(list.Members) != 3 {
			t.Fatalf("member list after two token joins: %+v", list.Members)
		}
		for _, m := range []*member{s2, s3} {
			if got := caHash(t, filepath.Join(m.dataDir, "pki")); got != caHash(t, c.pki) {
				t.Errorf("%s fetched a CA with hash %s into DATA/pki", m.name, got)
			}
			if got := serverToken(t, m); got != token {
				t.Errorf("%s's DATA/token is %q, want the cluster's server token", m.name, got)
			}
		}
		newKubectl(t, admin).must(t, "create", "configmap", "joined", "--from-literal=k=v")
		k3 := newKubectl(t, c.kubeconfig(t, s3))
		k3.waitReady(t)
		if out := k3.must(t, "get", "configmap", "joined", "-o", "jsonpath={.data.k}"); out != "v" {
			t.Errorf("s3's API serves configmap joined as %q", out)
		}
	})

	t.Run("server remove", func(t *testing.T) {
		runRefused(t, []string{`no store member is named "nope"`, "s1, s2, s3"}, "server", "remove", "nope", "--kubeconfig", admin)
		out := mustRun(t, "server", "remove", "s3", "--kubeconfig", admin).stdout
		if !strings.Contains(out, "removed server s3") {
			t.Errorf("server remove printed %q", out)
		}
		s3 := c.member(t, "s3")
		select {
		case <-s3.done:
		case <-time.After(15 * time.Second):
			t.Errorf("s3 still runs 15s after its removal")
		}
		var list ctlMemberList
		c.etcdctlJSON(t, &list, c.endpoints(s1), "member", "list")
		if _, ok := list.byName("s3"); ok || len(list.Members) != 2 {
			t.Errorf("member list after removing s3: %+v", list.Members)
		}
		runRefused(t, []string{"would leave a one-member cluster", "--force"}, "server", "remove", "s2", "--kubeconfig", admin)
	})
}

// lineWith returns the first line of out that contains s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
