package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunbookServers adds a fourth server to a bootstrapped cluster with
// docs/runbooks/servers.md, checks that it votes, serves the API and sits
// behind HAProxy, then removes it with the same runbook.
func TestRunbookServers(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.bootstrap(t)
	blocks := readRunbook(t, "servers.md")
	s1, s4 := l.machine("s1"), l.machine("s4")
	all := "https://" + s1.ip + ":2379,https://" + s4.ip + ":2379"
	k := l.kubectl(t)
	k.must(t, "create", "configmap", "before-s4", "--from-literal=k=v")

	l.run(t, sections(t, blocks, "Add a server")...)
	list := l.members(t, s1, all)
	if got := list.names(); !slices.Equal(got, []string{"s1", "s2", "s3", "s4"}) {
		t.Fatalf("members %v after adding s4", got)
	}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Errorf("%s is still a learner after the runbook promoted it", m.Name)
		}
	}
	if out := k.must(t, "--server", "https://"+s4.ip+":6443", "get", "configmap", "before-s4", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Errorf("s4's API does not serve the cluster's data: %q", out)
	}
	if cfg := readFileString(t, l.machine("lb").path("/etc/haproxy/haproxy.cfg")); !strings.Contains(cfg, "server s4 "+s4.ip+":6443") {
		t.Errorf("HAProxy's configuration has no s4:\n%s", cfg)
	}

	l.run(t, sections(t, blocks, "Remove a server")...)
	if got := l.members(t, s1, "https://"+s1.ip+":2379").names(); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Errorf("members %v after removing s4", got)
	}
	if s4.unit("cairn-server").running() {
		t.Errorf("s4's server still runs after its removal")
	}
	if cfg := readFileString(t, l.machine("lb").path("/etc/haproxy/haproxy.cfg")); strings.Contains(cfg, "server s4") {
		t.Errorf("HAProxy's configuration still has s4:\n%s", cfg)
	}
	if _, err := os.Stat(s4.path("/var/lib/cairn/server")); !os.IsNotExist(err) {
		t.Errorf("s4's data dir is still in place: %v", err)
	}
	if moved, _ := filepath.Glob(s4.path("/var/lib/cairn/server.removed-*")); len(moved) != 1 {
		t.Errorf("s4's data dir was not moved aside: %v", moved)
	}
	k.must(t, "create", "configmap", "after-s4", "--from-literal=k=v")
	l.checkAllRun(t, blocks)
}
