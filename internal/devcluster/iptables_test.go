package devcluster

import (
	"strings"
	"testing"
)

func TestMarkedRulesDeleteOnlyOurs(t *testing.T) {
	listing := `-P FORWARD DROP
-A FORWARD -i cairn-dev0 -m comment --comment cairn-dev -j ACCEPT
-A FORWARD -j DOCKER-USER
-A FORWARD -o cairn-dev0 -m comment --comment "cairn-dev" -j ACCEPT
-A FORWARD -m comment --comment "cairn-dev-other thing" -j ACCEPT
`
	got := markedRules(listing)
	want := []string{
		"-D FORWARD -i cairn-dev0 -m comment --comment cairn-dev -j ACCEPT",
		"-D FORWARD -o cairn-dev0 -m comment --comment cairn-dev -j ACCEPT",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if strings.Join(got[i], " ") != want[i] {
			t.Errorf("rule %d: %q, want %q", i, strings.Join(got[i], " "), want[i])
		}
	}
}

func TestHostRulesCarryTheComment(t *testing.T) {
	for _, r := range hostRules() {
		if !hasComment(append([]string{"-A", r.chain}, r.spec...)) {
			t.Errorf("rule %v has no %s comment: a sweep would not find it", r.spec, ruleComment)
		}
	}
}
