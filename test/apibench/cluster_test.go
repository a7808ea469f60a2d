package main

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestServerArgsServeTheAPIWithTLSAndNothingElse(t *testing.T) {
	c, err := newCluster("cairn", t.TempDir(), 3, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range c.members {
		for _, a := range []string{m.peer, m.store, m.api, m.metrics} {
			if seen[a] || !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("address %s repeated or not on loopback", a)
			}
			seen[a] = true
		}
	}
	args := c.serverArgs(c.members[1])
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("no %s in %v", name, args)
		}
		return args[i+1]
	}
	if args[0] != "server" || flag("--name") != "s2" || flag("--pki-dir") != c.pkiDir || flag("--api-listen") != c.members[1].api {
		t.Errorf("args %v", args)
	}
	if flag("--disable") != "scheduler,controllers" || slices.Contains(args, "--insecure") {
		t.Errorf("args %v: want TLS on and only the leader loops off", args)
	}
	if got := strings.Count(flag("--initial-cluster"), "="); got != 3 {
		t.Errorf("--initial-cluster %s names %d members, want 3", flag("--initial-cluster"), got)
	}
}
