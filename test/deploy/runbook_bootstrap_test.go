package deploy

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// bootstrap runs docs/runbooks/bootstrap.md: servers on s1, s2 and s3,
// HAProxy on lb, and the admin kubeconfig in s1's /etc/cairn.
func (l *lab) bootstrap(t *testing.T) {
	t.Helper()
	requireTool(t, "haproxy", "haproxy")
	l.run(t, readRunbook(t, "bootstrap.md")...)
}

// memberList is what `etcdctl member list -w json` prints.
type memberList struct {
	Members []struct {
		ID         uint64   `json:"ID"`
		Name       string   `json:"name"`
		PeerURLs   []string `json:"peerURLs"`
		ClientURLs []string `json:"clientURLs"`
		IsLearner  bool     `json:"isLearner"`
	} `json:"members"`
}

// members lists the store's members through the etcdctl of machine m.
func (l *lab) members(t *testing.T, m *machine, endpoints string) memberList {
	t.Helper()
	out := l.sh(t, m, `cairn etcdctl --endpoints "`+endpoints+`" member list -w json`)
	var list memberList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("member list -w json: %v\n%s", err, out)
	}
	return list
}

// names returns the members' names, sorted.
func (ml memberList) names() []string {
	var names []string
	for _, m := range ml.Members {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// hasLearner says whether a member is still a learner.
func (ml memberList) hasLearner() bool {
	for _, m := range ml.Members {
		if m.IsLearner {
			return true
		}
	}
	return false
}

// sh runs a one-line command as a block of the test's own on m and
// returns its output without the trace.
func (l *lab) sh(t *testing.T, m *machine, command string) string {
	t.Helper()
	out, err := l.runOn(m, block{doc: "test", section: t.Name(), hosts: []string{m.name}, text: "set +x\n" + command + "\n"})
	if err != nil {
		t.Fatalf("on %s: %s: %v\n%s", m.name, command, err, out)
	}
	_, out, _ = strings.Cut(out, "\n") // the script's path
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "+ ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// TestRunbookBootstrap runs the bootstrap runbook and checks the cluster
// it promises: three voting members with the example's names and
// addresses, an API that answers through HAProxy and on every server, the
// leader loops running, and data dirs only root can read.
func TestRunbookBootstrap(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.bootstrap(t)
	l.checkAllRun(t, readRunbook(t, "bootstrap.md"))
	s1 := l.machine("s1")

	list := l.members(t, s1, "https://"+s1.ip+":2379")
	if got := list.names(); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Errorf("members %v, want s1, s2 and s3", got)
	}
	for _, m := range list.Members {
		host := l.machine(m.Name).ip
		if m.IsLearner || !slices.Equal(m.PeerURLs, []string{"https://" + host + ":2380"}) || !slices.Equal(m.ClientURLs, []string{"https://" + host + ":2379"}) {
			t.Errorf("member %s: learner %v, peer URLs %v, client URLs %v; want a voter on %s", m.Name, m.IsLearner, m.PeerURLs, m.ClientURLs, host)
		}
	}

	k := l.kubectl(t)
	k.must(t, "create", "namespace", "shop")
	for _, name := range []string{"s1", "s2", "s3"} {
		server := "https://" + l.machine(name).ip + ":6443"
		if out := k.must(t, "--server", server, "get", "namespace", "shop", "-o", "name"); out != "namespace/shop\n" {
			t.Errorf("the API of %s lists %q, want namespace/shop", name, out)
		}
	}
	holder := k.must(t, "-n", "kube-system", "get", "lease", "cairn-leader", "-o", "jsonpath={.spec.holderIdentity}")
	if !slices.Contains([]string{"s1", "s2", "s3"}, holder) {
		t.Errorf("lease cairn-leader is held by %q, want one of the servers", holder)
	}

	for _, name := range []string{"s1", "s2", "s3"} {
		m := l.machine(name)
		for _, dir := range []string{"/var/lib/cairn", "/var/lib/cairn/server", "/etc/cairn/pki"} {
			fi, err := os.Stat(m.path(dir))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s:%s has mode %v, want 0700", name, dir, fi.Mode().Perm())
			}
		}
		tok := m.path("/var/lib/cairn/server/token")
		if fi, err := os.Stat(tok); err != nil {
			t.Errorf("%s: the join token the runbook points to: %v", name, err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: the join token has mode %v, want 0600", name, fi.Mode().Perm())
		} else if b := readFileString(t, tok); !strings.HasPrefix(b, "K10") {
			t.Errorf("%s: the join token reads %q, want K10...", name, b)
		}
		if err := m.waitHealthy(10 * time.Second); err != nil {
			t.Error(err)
		}
	}
}
